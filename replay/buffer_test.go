package replay_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newBuffer(t testing.TB, f func(*replay.Config)) *replay.Buffer {
	t.Helper()
	cfg := replay.DefaultConfig()
	if f != nil {
		f(&cfg)
	}
	b, err := replay.New(cfg)
	require.NoError(t, err)
	return b
}

func exp(prompt uint64, reward float64, version int64) replay.Experience {
	return replay.Experience{Prompt: prompt, Logp: []float32{-0.5, -1}, Reward: reward, Version: version}
}

func add(t testing.TB, b *replay.Buffer, e replay.Experience) replay.Receipt {
	t.Helper()
	r, err := b.Add(e)
	require.NoError(t, err)
	return r
}

// scripted builds the hand-checked distribution of TestTierAssignment:
// 20 prompts with R̄(p) = p/19, all distinct, so prompt p has rank p.
func scripted(t testing.TB, b *replay.Buffer) {
	t.Helper()
	for p := range uint64(20) {
		require.NoError(t, b.Observe(p, float64(p)/19))
	}
}

// TestTierAssignment: with n = 20 distinct R̄ the cuts at 40 % and 75 %
// fall between ranks 7|8 and 14|15: prompts 0–7 are Hard, 8–14 Medium,
// 15–19 Easy. Adding an experience whose reward equals R̄ leaves R̄ as it
// is ((x + x)/2 = x exactly).
func TestTierAssignment(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 100, 4 })
	scripted(t, b)
	for p := range uint64(20) {
		want := replay.Hard
		switch {
		case p >= 15:
			want = replay.Easy
		case p >= 8:
			want = replay.Medium
		}
		if r := add(t, b, exp(p, float64(p)/19, 0)); r.Tier != want || r.Stale {
			t.Errorf("prompt %d (R̄ %.3f): %v, want %v", p, float64(p)/19, r.Tier, want)
		}
	}
	st := b.Stats()
	assert.Equal(t, [3]int{5, 7, 8}, st.Len, "tier sizes, want [5 7 8]")
	// The cuts: R̄ of rank ⌊0.4·20⌋ = 8 and ⌊0.75·20⌋ = 15.
	assert.Equal(t, 8.0/19, st.HardBelow, "cuts, want 8/19 and 15/19")
	assert.Equal(t, 15.0/19, st.EasyFrom, "cuts, want 8/19 and 15/19")
}

// TestPromotion: prompt 0 starts last (R̄ 0 over two rewards) and then
// solves every attempt. With W = 4 its R̄ goes 1/3, 1/2, 3/4, 1; among the
// others (p/19) that is rank 6 (Hard), 9 and 14 (Medium), then a tie with
// prompt 19 at the top (ranks 18–19: Easy). Its earlier experiences stay
// where they were put; the prompts it passed move down one rank.
func TestPromotion(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 100, 4 })
	scripted(t, b)
	first := add(t, b, exp(0, 0, 0))
	require.Equal(t, replay.Hard, first.Tier, "prompt 0 starts in")
	for i, want := range []replay.Tier{replay.Hard, replay.Medium, replay.Medium, replay.Easy} {
		r := add(t, b, exp(0, 1, 0))
		m, _, _ := b.Baseline(0)
		assert.Equal(t, want, r.Tier, "success %d (R̄ %.3f)", i+1, m)
	}
	for p, want := range map[uint64]replay.Tier{1: replay.Hard, 8: replay.Hard, 9: replay.Medium, 15: replay.Medium, 16: replay.Easy} {
		if got, ok := b.TierOf(p); !ok || got != want {
			t.Errorf("after prompt 0's rise, prompt %d is %v, want %v", p, got, want)
		}
	}
	for _, e := range b.Entries(nil) {
		if e.ID == first.ID && e.Tier != replay.Hard {
			t.Errorf("the first experience moved to %v", e.Tier)
		}
		if e.Prompt == 0 && e.Baseline != 1 {
			t.Errorf("prompt 0's experiences report baseline %v, want the current R̄ 1", e.Baseline)
		}
	}
}

// TestAddGroupSharesTier: a group's rewards all enter R̄ before any of its
// experiences is placed, so they share a tier; one by one, the first of
// them would still see the prompt's old R̄.
func TestAddGroupSharesTier(t *testing.T) {
	group := []replay.Experience{exp(0, 1, 0), exp(0, 1, 0), exp(0, 1, 0), exp(0, 1, 0)}
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 100, 4 })
	scripted(t, b)
	rs := make([]replay.Receipt, 4)
	require.NoError(t, b.AddGroup(rs, group))
	for i, r := range rs {
		assert.Equal(t, replay.Easy, r.Tier, "receipt %d: %+v, want Easy with id %d", i, r, i)
		assert.Equal(t, uint64(i), r.ID, "receipt %d: %+v, want Easy with id %d", i, r, i)
	}
	b2 := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 100, 4 })
	scripted(t, b2)
	// R̄(0) = (0 + 1)/2 = 0.5, rank 9 of 20.
	if r := add(t, b2, group[0]); r.Tier != replay.Medium {
		t.Errorf("a lone first success goes to %v, want Medium", r.Tier)
	}
}

// TestEvictionOrder: a full tier drops its oldest, one for one, and the
// drop function sees them in order.
func TestEvictionOrder(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) {
		c.Capacity, c.Shares = 10, replay.TierWeights{replay.Easy: 0.3, replay.Medium: 0.3, replay.Hard: 0.4}
	})
	var dropped []replay.Dropped
	b.SetDropFunc(func(d replay.Dropped) { dropped = append(dropped, d) })
	// A lone prompt's position is its hash; whatever tier that is, all
	// its experiences go there.
	var tier replay.Tier
	require.NoError(t, b.SetVersion(8))
	for i := range 9 {
		r := add(t, b, exp(7, 1, int64(i)))
		if i == 0 {
			tier = r.Tier
		} else if r.Tier != tier {
			t.Fatalf("experience %d went to %v, not %v", i, r.Tier, tier)
		}
	}
	st := b.Stats()
	c := st.Capacity[tier]
	require.Equal(t, c, st.Len[tier], "%v tier: len evicted %d dropped", tier, st.Evicted[tier])
	require.Equal(t, 9-c, int(st.Evicted[tier]), "%v tier: len evicted %d dropped", tier, st.Evicted[tier])
	require.Equal(t, 9-c, len(dropped), "%v tier: len evicted %d dropped", tier, st.Evicted[tier])
	for i, d := range dropped {
		assert.Equal(t, uint64(i), d.ID, "drop %d: id from (version), want id %d evicted", i, i)
		assert.Equal(t, replay.Evicted, d.Reason, "drop %d: id from (version), want id %d evicted", i, i)
		assert.Equal(t, tier, d.Tier, "drop %d: id from (version), want id %d evicted", i, i)
		assert.Equal(t, int64(i), d.Version, "drop %d: id from (version), want id %d evicted", i, i)
	}
	var ids []uint64
	for _, e := range b.Entries(nil) {
		ids = append(ids, e.ID)
	}
	var want []uint64
	for id := uint64(9 - c); id < 9; id++ {
		want = append(want, id)
	}
	assert.True(t, slices.Equal(ids, want), "held %v, want the newest %v in order", ids, want)
}

func TestCurriculum(t *testing.T) {
	w := func(e, m, h float64) replay.TierWeights {
		return replay.TierWeights{replay.Easy: e, replay.Medium: m, replay.Hard: h}
	}
	three := replay.Curriculum{Points: []replay.CurriculumPoint{
		{0.2, w(1, 0, 0)}, {0.6, w(0, 1, 0)}, {1, w(0, 0, 2)},
	}}
	for _, c := range []struct {
		name     string
		cur      replay.Curriculum
		progress float64
		want     replay.TierWeights
	}{
		{"default start", replay.DefaultCurriculum(), 0, w(0.5, 0.35, 0.15)},
		{"default middle", replay.DefaultCurriculum(), 0.5, w(0.325, 0.35, 0.325)},
		{"default end", replay.DefaultCurriculum(), 1, w(0.15, 0.35, 0.5)},
		{"clamped below", replay.DefaultCurriculum(), -3, w(0.5, 0.35, 0.15)},
		{"clamped above", replay.DefaultCurriculum(), 1.5, w(0.15, 0.35, 0.5)},
		{"before the first point", three, 0.1, w(1, 0, 0)},
		{"first segment", three, 0.3, w(0.75, 0.25, 0)},
		{"on a point", three, 0.6, w(0, 1, 0)},
		{"second segment", three, 0.9, w(0, 0.25, 1.5)},
		{"one point", replay.Curriculum{Points: []replay.CurriculumPoint{{0.5, w(1, 2, 3)}}}, 0.9, w(1, 2, 3)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.cur.Weights(c.progress)
			require.NoError(t, err)
			for i := range got {
				require.InDelta(t, c.want[i], got[i], 1e-12, "Weights(%v) = %v, want %v", c.progress, got, c.want)
			}
		})
	}
	for _, c := range []struct {
		name     string
		cur      replay.Curriculum
		progress float64
	}{
		{"no points", replay.Curriculum{}, 0},
		{"NaN progress", replay.DefaultCurriculum(), math.NaN()},
		{"out of order", replay.Curriculum{Points: []replay.CurriculumPoint{{0.5, w(1, 1, 1)}, {0.5, w(1, 1, 1)}}}, 0},
		{"progress > 1", replay.Curriculum{Points: []replay.CurriculumPoint{{2, w(1, 1, 1)}}}, 0},
		{"negative weight", replay.Curriculum{Points: []replay.CurriculumPoint{{0, w(1, -1, 1)}}}, 0},
		{"all zero", replay.Curriculum{Points: []replay.CurriculumPoint{{0, w(0, 0, 0)}}}, 0},
	} {
		_, err := c.cur.Weights(c.progress)
		assert.Error(t, err, "%s: no error", c.name)
	}
}

// filled returns a buffer with every tier populated: the 20 scripted
// prompts, n experiences each.
func filled(t testing.TB, n int) *replay.Buffer {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 2000, 4 })
	scripted(t, b)
	for range n {
		for p := range uint64(20) {
			add(t, b, exp(p, float64(p)/19, 0))
		}
	}
	return b
}

// TestSampleFollowsWeights: the tier frequencies follow the weights, and
// the curriculum's hard-heavy end draws mostly Hard.
func TestSampleFollowsWeights(t *testing.T) {
	b := filled(t, 3) // Easy 15, Medium 21, Hard 24
	rng := rand.New(rand.NewPCG(5, 6))
	late, _ := replay.DefaultCurriculum().Weights(1)
	for _, c := range []struct {
		name string
		w    replay.TierWeights
		want [3]float64
	}{
		{"explicit", replay.TierWeights{replay.Easy: 0.6, replay.Medium: 0.3, replay.Hard: 0.1}, [3]float64{0.6, 0.3, 0.1}},
		{"curriculum end", late, [3]float64{0.15, 0.35, 0.5}},
		{"only hard", replay.TierWeights{replay.Hard: 1}, [3]float64{0, 0, 1}},
		{"proportional", replay.TierWeights{}, [3]float64{15.0 / 60, 21.0 / 60, 24.0 / 60}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var counts [3]float64
			dst := make([]replay.Sampled, 4)
			const draws = 20000
			for range draws / 4 {
				n, err := b.Sample(dst, rng, replay.SampleOptions{Weights: c.w, Replace: true})
				require.NoError(t, err, "Sample")
				require.Equal(t, 4, n, "Sample")
				for _, s := range dst {
					counts[s.Tier]++
				}
			}
			for i := range counts {
				if got := counts[i] / draws; math.Abs(got-c.want[i]) > 0.015 {
					t.Errorf("%v drawn %.3f of the time, want %.3f", replay.Tier(i), got, c.want[i])
				}
			}
		})
	}
}

// TestSampleWithoutReplacement: no repeats within a call, every pair of a
// 4-experience tier equally likely for K = 2, and everything once K ≥ Len.
func TestSampleWithoutReplacement(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity = 100 })
	for range 4 {
		add(t, b, exp(1, 0.5, 0))
	}
	rng := rand.New(rand.NewPCG(7, 8))
	pairs := map[[2]uint64]int{}
	dst := make([]replay.Sampled, 2)
	const rounds = 30000
	for range rounds {
		n, err := b.Sample(dst, rng, replay.SampleOptions{})
		require.Equal(t, 2, n, "Sample")
		require.NoError(t, err, "Sample")
		a, c := dst[0].ID, dst[1].ID
		if a == c {
			t.Fatalf("drew %d twice", a)
		}
		pairs[[2]uint64{min(a, c), max(a, c)}]++
	}
	require.Len(t, pairs, 6, "%d distinct pairs, want 6", len(pairs))
	for p, n := range pairs {
		if got := float64(n) / rounds; math.Abs(got-1.0/6) > 0.012 {
			t.Errorf("pair %v drawn %.3f of the time, want 1/6", p, got)
		}
	}
	big := make([]replay.Sampled, 10)
	n, err := b.Sample(big, rng, replay.SampleOptions{})
	ids := map[uint64]bool{}
	for _, s := range big[:n] {
		ids[s.ID] = true
	}
	require.NoError(t, err, "K = 10 from 4 drawn, %d distinct", len(ids))
	assert.Equal(t, 4, n, "K = 10 from 4 drawn, %d distinct", len(ids))
	assert.Len(t, ids, 4, "K = 10 from 4 drawn, %d distinct", len(ids))
	if n, _ := b.Sample(big, rng, replay.SampleOptions{Replace: true}); n != 10 {
		t.Errorf("with replacement drew %d of 10", n)
	}
	// Weight only on empty tiers: nothing to draw.
	w := replay.TierWeights{}
	w[(dst[0].Tier+1)%3] = 1
	n, err = b.Sample(big, rng, replay.SampleOptions{Weights: w})
	assert.Equal(t, 0, n, "weights on empty tiers drawn")
	assert.NoError(t, err, "weights on empty tiers drawn")
	empty := newBuffer(t, nil)
	n, err = empty.Sample(big, rng, replay.SampleOptions{Replace: true})
	assert.Equal(t, 0, n, "empty buffer drawn")
	assert.NoError(t, err, "empty buffer drawn")
}

// TestSampleDeterministic: equal buffers and equal seeds give equal draws.
func TestSampleDeterministic(t *testing.T) {
	draw := func() []uint64 {
		b := filled(t, 2)
		rng := rand.New(rand.NewPCG(11, 12))
		var ids []uint64
		dst := make([]replay.Sampled, 5)
		for i := range 50 {
			w, _ := replay.DefaultCurriculum().Weights(float64(i) / 50)
			n, err := b.Sample(dst, rng, replay.SampleOptions{Weights: w, Replace: i%2 == 0})
			require.NoError(t, err)
			for _, s := range dst[:n] {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	a, c := draw(), draw()
	assert.True(t, slices.Equal(a, c), "two runs with the same seed drew differently")
}

// TestStaleness: with η = 2, SetVersion(4) drops versions 0 and 1, a late
// version-1 experience is refused, and samples are at most 2 versions old;
// without the guard nothing is dropped.
func TestStaleness(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.MaxStaleness = 100, 2 })
	var drops []replay.Dropped
	b.SetDropFunc(func(d replay.Dropped) { drops = append(drops, d) })
	for v := range int64(4) {
		require.NoError(t, b.SetVersion(v))
		add(t, b, exp(uint64(v), 0.5, v))
	}
	require.NoError(t, b.SetVersion(4))
	if r := add(t, b, exp(9, 0.5, 1)); !r.Stale {
		t.Error("a version-1 experience at version 4 was accepted")
	}
	if _, _, ok := b.Baseline(9); ok {
		t.Error("a stale experience's reward entered R̄")
	}
	if r := add(t, b, exp(9, 0.5, 2)); r.Stale {
		t.Error("a version-2 experience at version 4 was refused")
	}
	st := b.Stats()
	expired := st.Expired[0] + st.Expired[1] + st.Expired[2]
	assert.Equal(t, uint64(2), expired, "expired, stale on arrival, len, offered; want 2, 1, 3, 6")
	assert.Equal(t, uint64(1), st.StaleOnArrival, "expired, stale on arrival, len, offered; want 2, 1, 3, 6")
	assert.Equal(t, 3, b.Len(), "expired, stale on arrival, len, offered; want 2, 1, 3, 6")
	assert.Equal(t, uint64(6), st.Offered, "expired, stale on arrival, len, offered; want 2, 1, 3, 6")
	var reasons []string
	for _, d := range drops {
		reasons = append(reasons, fmt.Sprintf("%d:%v", d.ID, d.Reason))
	}
	if got := strings.Join(reasons, " "); got != "0:expired 1:expired 4:stale on arrival" {
		t.Errorf("drops %s", got)
	}
	dst := make([]replay.Sampled, 3)
	if n, _ := b.Sample(dst, rand.New(rand.NewPCG(1, 1)), replay.SampleOptions{}); n != 3 {
		t.Fatalf("drew %d", n)
	}
	for _, s := range dst {
		assert.LessOrEqual(t, s.Age, int64(2), "sampled age (version %d) at version 4 with η = 2", s.Version)
		assert.Equal(t, 4-s.Version, s.Age, "sampled age (version %d) at version 4 with η = 2", s.Version)
	}
	assert.ErrorIs(t, b.SetVersion(3), tensor.ErrRange, "going back")
	_, err := b.Add(exp(9, 0.5, 5))
	assert.ErrorIs(t, err, tensor.ErrRange, "an experience from a future policy version (5 at 4)")
	assert.ErrorIs(t, b.AddGroup(nil, []replay.Experience{exp(9, 0.5, 4), exp(9, 0.5, 6)}), tensor.ErrRange, "a group with a future version")

	off := newBuffer(t, func(c *replay.Config) { c.Capacity = 100 })
	add(t, off, exp(1, 0, 0))
	off.SetVersion(1000)
	if r := add(t, off, exp(1, 0, 0)); r.Stale || off.Len() != 2 {
		t.Error("the guard is on by default")
	}
	st = off.Stats()
	assert.Equal(t, int64(1000), st.Version, "version")
}

func TestStatsAccounting(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.MaxStaleness = 30, 3 })
	rng := rand.New(rand.NewPCG(13, 14))
	dst := make([]replay.Sampled, 4)
	for step := range int64(40) {
		b.SetVersion(step)
		for range 5 {
			add(t, b, exp(uint64(rng.IntN(12)), float64(rng.IntN(2)), max(0, step-int64(rng.IntN(6)))))
		}
		b.Sample(dst, rng, replay.SampleOptions{})
	}
	st := b.Stats()
	held := uint64(st.Len[0] + st.Len[1] + st.Len[2])
	var evicted, expired, hist uint64
	for i := range st.Evicted {
		evicted += st.Evicted[i]
		expired += st.Expired[i]
		assert.Equal(t, uint64(st.Len[i])+st.Evicted[i]+st.Expired[i], st.Inserted[i], "%v tier: inserted ≠ %d held + %d evicted + %d expired", replay.Tier(i), st.Len[i], st.Evicted[i], st.Expired[i])
	}
	for _, h := range st.AgeHist {
		hist += h
	}
	assert.Equal(t, uint64(200), st.Offered, "offered ≠ %d held + %d evicted + %d expired + %d stale", held, evicted, expired, st.StaleOnArrival)
	assert.Equal(t, held+evicted+expired+st.StaleOnArrival, st.Offered, "offered ≠ %d held + %d evicted + %d expired + %d stale", held, evicted, expired, st.StaleOnArrival)
	assert.Equal(t, uint64(160), st.Sampled, "sample statistics")
	assert.Equal(t, st.Sampled, hist, "sample statistics")
	assert.LessOrEqual(t, st.MaxAge, int64(3), "sample statistics")
	assert.GreaterOrEqual(t, st.MeanAge, 0.0, "sample statistics")
	assert.LessOrEqual(t, st.MeanAge, 3.0, "sample statistics")
	// 30·(0.25, 0.35, 0.4) = 7.5, 10.5, 12: the tied half goes to Medium.
	assert.Equal(t, 12, st.Prompts, "prompts capacities")
	assert.Equal(t, [3]int{7, 11, 12}, st.Capacity, "prompts capacities")
	h := make([]int, 4)
	err := b.Histogram(h, 0, 1)
	require.NoError(t, err, "VCRS histogram %v", h)
	assert.Equal(t, 12, h[0]+h[1]+h[2]+h[3], "VCRS histogram %v", h)
}

func TestBufferErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*replay.Config)
		arg  string
	}{
		{"capacity", func(c *replay.Config) { c.Capacity = 2 }, "Capacity"},
		{"window", func(c *replay.Config) { c.Window = 0 }, "Window"},
		{"prompts", func(c *replay.Config) { c.MaxPrompts = 0 }, "MaxPrompts"},
		{"staleness", func(c *replay.Config) { c.MaxStaleness = -1 }, "MaxStaleness"},
		{"share 0", func(c *replay.Config) { c.Shares[replay.Easy] = 0 }, "Shares[0]"},
		{"share NaN", func(c *replay.Config) { c.Shares[replay.Hard] = math.NaN() }, "Shares[2]"},
		{"shares sum", func(c *replay.Config) { c.Shares[replay.Medium] = 0.5 }, "Shares"},
		{"empty tier", func(c *replay.Config) {
			c.Capacity, c.Shares = 10, replay.TierWeights{replay.Easy: 0.01, replay.Medium: 0.49, replay.Hard: 0.5}
		}, "Shares[0]"},
	} {
		cfg := replay.DefaultConfig()
		c.f(&cfg)
		_, err := replay.New(cfg)
		require.ErrorIs(t, err, tensor.ErrRange, "%s, want an error naming %s", c.name, c.arg)
		assert.True(t, containsArg(err, c.arg), "%s, want an error naming %s", c.name, c.arg)
	}
	b := newBuffer(t, nil)
	bad := func(f func(*replay.Experience)) replay.Experience { e := exp(1, 0, 0); f(&e); return e }
	for _, c := range []struct {
		name string
		e    replay.Experience
		kind error
		arg  string
	}{
		{"NaN reward", bad(func(e *replay.Experience) { e.Reward = math.NaN() }), tensor.ErrNonFinite, "experience.reward"},
		{"negative version", bad(func(e *replay.Experience) { e.Version = -1 }), tensor.ErrRange, "experience.version"},
		{"no logp", bad(func(e *replay.Experience) { e.Logp = nil }), tensor.ErrEmpty, "experience.logp"},
		{"Inf logp", bad(func(e *replay.Experience) { e.Logp = []float32{0, float32(math.Inf(-1))} }), tensor.ErrNonFinite, "experience.logp[1]"},
	} {
		_, err := b.Add(c.e)
		require.ErrorIs(t, err, c.kind, "Add %s, naming %s", c.name, c.arg)
		assert.True(t, containsArg(err, c.arg), "Add %s, naming %s", c.name, c.arg)
	}
	group := []replay.Experience{exp(1, 0, 0), bad(func(e *replay.Experience) { e.Reward = math.Inf(1) })}
	if err := b.AddGroup(nil, group); !containsArg(err, "experiences[1].reward") {
		t.Errorf("AddGroup: %v", err)
	}
	assert.NoError(t, b.AddGroup(make([]replay.Receipt, 1), group[:1:1][:1]), "AddGroup of one")
	assert.ErrorIs(t, b.AddGroup(make([]replay.Receipt, 3), group), tensor.ErrShape, "AddGroup short dst")
	if st := b.Stats(); st.Offered != 1 {
		t.Errorf("failed adds changed the buffer: offered %d", st.Offered)
	}
	dst := make([]replay.Sampled, 1)
	_, err := b.Sample(dst, nil, replay.SampleOptions{})
	assert.ErrorIs(t, err, tensor.ErrEmpty, "nil rng")
	if _, err := b.Sample(dst, rand.New(rand.NewPCG(1, 1)), replay.SampleOptions{Weights: replay.TierWeights{1, math.Inf(1), 0}}); !containsArg(err, "weights[1]") {
		t.Errorf("Inf weight: %v", err)
	}
	assert.ErrorIs(t, b.Observe(1, math.NaN()), tensor.ErrNonFinite, "Observe NaN")
	_, err = b.Quantile(2)
	assert.ErrorIs(t, err, tensor.ErrRange, "Quantile(2)")
}

// TestHardPromptAlwaysHard: early in training most prompts sit at R̄ = 0;
// every experience of such a prompt goes to the Hard tier, whatever its id
// and however large the tied block, and a prompt that then succeeds moves
// its new experiences out of Hard by its current R̄.
func TestHardPromptAlwaysHard(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 1000, 4 })
	// 70 prompts never solved, 30 always solved.
	for p := range uint64(100) {
		r := 0.0
		if p >= 70 {
			r = 1
		}
		for range 4 {
			require.NoError(t, b.Observe(p, r))
		}
	}
	for p := range uint64(70) {
		if r := add(t, b, exp(p, 0, 0)); r.Tier != replay.Hard {
			t.Fatalf("prompt %d at R̄ = 0 went to %v", p, r.Tier)
		}
	}
	for p := uint64(70); p < 100; p++ {
		if r := add(t, b, exp(p, 1, 0)); r.Tier != replay.Medium {
			t.Fatalf("prompt %d at R̄ = 1 (positions 0.70–1) went to %v, want medium (bottom of its block, 0.70)", p, r.Tier)
		}
	}
	// Prompt 3 is solved three times, then added with reward 1: its R̄ is
	// 1, tied with the 30 solved prompts, with 69 prompts below: p = 0.69,
	// Medium.
	for range 3 {
		require.NoError(t, b.Observe(3, 1))
	}
	if r := add(t, b, exp(3, 1, 0)); r.Tier != replay.Medium {
		t.Errorf("prompt 3 at R̄ = 1 after its successes went to %v, want medium", r.Tier)
	}
	// The others, still at 0, stay Hard.
	if r := add(t, b, exp(4, 0, 0)); r.Tier != replay.Hard {
		t.Errorf("prompt 4 went to %v", r.Tier)
	}
}

// filledPrompts fills a buffer with k experiences for each of n prompts,
// experience j of prompt p having reward (p+j)%2.
func filledPrompts(t testing.TB, n, k int) *replay.Buffer {
	t.Helper()
	b := newBuffer(t, func(c *replay.Config) { c.Capacity = 10 * n * k })
	for p := range uint64(n) {
		for j := range k {
			add(t, b, exp(p, float64((int(p)+j)%2), 0))
		}
	}
	return b
}

// TestSampleForPrompt: a draw for a prompt returns that prompt's own
// experiences, without repeats; when it has too few, the rest fall back to
// the tier draw over other prompts (marked), or stop with NoFallback.
func TestSampleForPrompt(t *testing.T) {
	b := filledPrompts(t, 50, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	dst := make([]replay.Sampled, 3)
	for p := range uint64(50) {
		n, err := b.Sample(dst, rng, replay.SampleOptions{ForPrompt: true, Prompt: p})
		require.NoError(t, err, "prompt %d drawn", p)
		require.Equal(t, 3, n, "prompt %d drawn", p)
		seen := map[uint64]bool{}
		for _, s := range dst {
			if s.Prompt != p || s.Fallback || seen[s.ID] {
				t.Fatalf("prompt %d: drew %+v", p, s)
			}
			seen[s.ID] = true
		}
	}
	dst = make([]replay.Sampled, 5)
	n, err := b.Sample(dst, rng, replay.SampleOptions{ForPrompt: true, Prompt: 7})
	require.NoError(t, err, "fallback drawn")
	require.Equal(t, 5, n, "fallback drawn")
	own, ids := 0, map[uint64]bool{}
	for _, s := range dst {
		if ids[s.ID] {
			t.Fatalf("experience %d drawn twice", s.ID)
		}
		ids[s.ID] = true
		if s.Prompt == 7 {
			own++
			assert.False(t, s.Fallback, "own experience marked fallback")
		} else if !s.Fallback {
			t.Errorf("experience of prompt %d not marked fallback", s.Prompt)
		}
	}
	assert.Equal(t, 3, own, "own experiences of 3")
	n, err = b.Sample(dst, rng, replay.SampleOptions{ForPrompt: true, Prompt: 7, NoFallback: true})
	require.NoError(t, err, "no fallback drawn; want 3")
	assert.Equal(t, 3, n, "no fallback drawn; want 3")
	n, err = b.Sample(dst, rng, replay.SampleOptions{ForPrompt: true, Prompt: 7, Replace: true})
	require.NoError(t, err, "with replacement drawn")
	require.Equal(t, 5, n, "with replacement drawn")
	for _, s := range dst {
		assert.Equal(t, uint64(7), s.Prompt, "with replacement drew prompt")
	}
	// An unknown prompt falls back entirely.
	n, err = b.Sample(dst, rng, replay.SampleOptions{ForPrompt: true, Prompt: 999})
	if err != nil || n != 5 || !dst[0].Fallback {
		t.Errorf("unknown prompt: %d drawn, %v, first %+v", n, err, dst[0])
	}
	// Same state, same generator: same draws.
	a, c := make([]replay.Sampled, 5), make([]replay.Sampled, 5)
	b.Sample(a, rand.New(rand.NewPCG(3, 4)), replay.SampleOptions{ForPrompt: true, Prompt: 11})
	b.Sample(c, rand.New(rand.NewPCG(3, 4)), replay.SampleOptions{ForPrompt: true, Prompt: 11})
	for i := range a {
		require.Equal(t, c[i].ID, a[i].ID, "draw %d differs", i)
	}
}
