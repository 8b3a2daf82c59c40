package replay_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naive is the obvious VCRS: every reward of every prompt, the mean of the
// last W recomputed from scratch.
type naive struct {
	w       int
	rewards map[uint64][]float64
}

func (n *naive) observe(p uint64, r float64) { n.rewards[p] = append(n.rewards[p], r) }

func (n *naive) mean(p uint64) (float64, int) {
	rs := n.rewards[p]
	rs = rs[max(0, len(rs)-n.w):]
	var s float64
	for _, r := range rs {
		s += r
	}
	return s / float64(len(rs)), len(rs)
}

func newVCRS(t testing.TB, w, max int) *replay.VCRS {
	t.Helper()
	v, err := replay.NewVCRS(w, max)
	require.NoError(t, err)
	return v
}

func TestVCRSMeanMatchesWindow(t *testing.T) {
	for _, c := range []struct {
		name    string
		w       int
		prompts int
		reward  func(*rand.Rand) float64
		exact   bool
	}{
		// Sums of 0 and 1 are exact in float64, whatever the history.
		{"binary W=20", 20, 7, func(r *rand.Rand) float64 { return float64(r.IntN(2)) }, true},
		{"W=1", 1, 5, func(r *rand.Rand) float64 { return r.NormFloat64() }, true},
		{"gaussian W=20", 20, 9, func(r *rand.Rand) float64 { return r.NormFloat64() }, false},
		{"shaped ±20 W=3", 3, 4, func(r *rand.Rand) float64 { return 40*r.Float64() - 20 }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.w)))
			v := newVCRS(t, c.w, 100)
			ref := &naive{w: c.w, rewards: map[uint64][]float64{}}
			for i := range 5000 {
				p := uint64(rng.IntN(c.prompts))
				r := c.reward(rng)
				require.NoError(t, v.Observe(p, r))
				ref.observe(p, r)
				got, n, ok := v.Mean(p)
				want, wn := ref.mean(p)
				require.True(t, ok, "step %d: Mean(%d)", i, p)
				require.Equal(t, wn, n, "step %d: Mean(%d)", i, p)
				if c.exact && got != want || math.Abs(got-want) > 1e-12 {
					t.Fatalf("step %d: Mean(%d) = %v, want %v", i, p, got, want)
				}
			}
		})
	}
}

// TestVCRSSumDoesNotDrift feeds rewards whose running sum would lose
// everything to rounding without the periodic re-addition: after a huge
// reward leaves the window, the mean must be that of the small ones again.
func TestVCRSSumDoesNotDrift(t *testing.T) {
	v := newVCRS(t, 4, 1)
	for _, r := range []float64{1e17, 0.1, 0.2, 0.3} {
		v.Observe(9, r)
	}
	// The window wraps here and is re-added; now push the huge one out.
	for _, r := range []float64{0.1, 0.2, 0.3, 0.4} {
		v.Observe(9, r)
	}
	got, _, _ := v.Mean(9)
	if want := (0.1 + 0.2 + 0.3 + 0.4) / 4; got != want {
		t.Errorf("mean %v, want %v", got, want)
	}
	// Mid-cycle the subtraction of 1e17 has already happened: with a naive
	// running sum the mean here would be 0 or off by ~4.
	v2 := newVCRS(t, 4, 1)
	for _, r := range []float64{0.5, 0.5, 0.5, 1e17, 0.5, 0.5, 0.5, 0.5} {
		v2.Observe(9, r)
	}
	if got, _, _ := v2.Mean(9); got != 0.5 {
		t.Errorf("mean after the outlier left %v, want 0.5", got)
	}
}

// TestVCRSEvictsLeastRecentlyUpdated checks the memory bound: at capacity a
// new prompt replaces the one updated longest ago, and reads do not count
// as updates.
func TestVCRSEvictsLeastRecentlyUpdated(t *testing.T) {
	v := newVCRS(t, 3, 3)
	for _, p := range []uint64{1, 2, 3} {
		v.Observe(p, float64(p))
	}
	v.Observe(1, 1) // 2 is now the least recently updated
	v.Mean(2)       // a read does not save it
	v.Observe(4, 4)
	if _, _, ok := v.Mean(2); ok {
		t.Error("prompt 2 still tracked")
	}
	for _, p := range []uint64{1, 3, 4} {
		if _, _, ok := v.Mean(p); !ok {
			t.Errorf("prompt %d forgotten", p)
		}
	}
	assert.Equal(t, 3, v.Len(), "Len Forgotten, want 3 and 1")
	assert.Equal(t, uint64(1), v.Forgotten(), "Len Forgotten, want 3 and 1")
	// A forgotten prompt comes back with a fresh window.
	v.Observe(2, 10)
	if m, n, _ := v.Mean(2); m != 10 || n != 1 {
		t.Errorf("re-tracked prompt: mean %v over %d", m, n)
	}
	if _, _, ok := v.Mean(3); ok {
		t.Error("prompt 3 should have been evicted by prompt 2's return")
	}
}

// TestVCRSOrderStatistics compares ranks, quantiles and histograms with a
// sorted list of the means after every kind of update, evictions included.
func TestVCRSOrderStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const maxPrompts = 50
	v := newVCRS(t, 5, maxPrompts)
	ref := &naive{w: 5, rewards: map[uint64][]float64{}}
	var order []uint64 // least recently updated first, to mirror eviction
	hist := make([]int, 7)
	for step := range 3000 {
		p := uint64(rng.IntN(80))
		r := float64(rng.IntN(4)) / 3 // many ties
		v.Observe(p, r)
		if i := slices.Index(order, p); i >= 0 {
			order = slices.Delete(order, i, i+1)
		} else if len(order) == maxPrompts {
			delete(ref.rewards, order[0])
			order = order[1:]
		}
		order = append(order, p)
		ref.observe(p, r)
		if step%37 != 0 {
			continue
		}
		// The tracker's means, after checking them against the reference:
		// ranks must be consistent with the values the tracker holds.
		var ms []float64
		for q := range ref.rewards {
			got, _, ok := v.Mean(q)
			if want, _ := ref.mean(q); !ok || math.Abs(got-want) > 1e-12 {
				t.Fatalf("step %d: Mean(%d) = %v, %v; want %v", step, q, got, ok, want)
			}
			ms = append(ms, got)
		}
		slices.Sort(ms)
		require.Equal(t, len(ms), v.Len(), "step %d: Len", step)
		for _, q := range []float64{0, 0.25, 0.4, 0.75, 0.999, 1} {
			got, err := v.Quantile(q)
			want := ms[min(int(q*float64(len(ms))), len(ms)-1)]
			require.NoError(t, err, "step %d: Quantile(%v)", step, q)
			require.Equal(t, want, got, "step %d: Quantile(%v)", step, q)
		}
		for q := range ref.rewards {
			m, _, _ := v.Mean(q)
			below := 0
			for _, x := range ms {
				if x < m {
					below++
				}
			}
			pos, ok := v.Position(q)
			lo := float64(below) / float64(len(ms))
			hi := float64(below+countEq(ms, m)) / float64(len(ms))
			require.True(t, ok, "step %d: Position(%d): want in the tie block [, )", step, q)
			require.GreaterOrEqual(t, pos, lo, "step %d: Position(%d): want in the tie block [, )", step, q)
			require.Less(t, pos, hi, "step %d: Position(%d): want in the tie block [, )", step, q)
		}
		require.NoError(t, v.Histogram(hist, -0.1, 1.3))
		want := make([]int, len(hist))
		for _, x := range ms {
			want[min(max(int((x+0.1)/0.2), 0), len(want)-1)]++
		}
		require.True(t, slices.Equal(hist, want), "step %d: Histogram %v, want %v", step, hist, want)
	}
}

func countEq(xs []float64, m float64) int {
	n := 0
	for _, x := range xs {
		if x == m {
			n++
		}
	}
	return n
}

// TestPositionTiesGoHard: prompts that share one R̄ all take the position
// of the lowest of them, so a tied block lands whole in the hardest tier it
// reaches — every prompt at R̄ = 0 is Hard, whatever its id — and the rule
// depends on the scores only.
func TestPositionTiesGoHard(t *testing.T) {
	const n = 1000
	v := newVCRS(t, 20, n)
	// 600 prompts at R̄ = 0 (hard), 250 at 0.5, 150 at 1.
	for p := range uint64(n) {
		r := 0.0
		switch {
		case p >= 850:
			r = 1
		case p >= 600:
			r = 0.5
		}
		v.Observe(p, r)
	}
	for p := range uint64(n) {
		pos, ok := v.Position(p)
		require.True(t, ok, "prompt %d not tracked", p)
		var want float64
		switch {
		case p >= 850:
			want = 0.85
		case p >= 600:
			want = 0.6
		}
		require.Equal(t, want, pos, "prompt %d: position, (the bottom of its tied block)", p)
	}
}

func TestVCRSErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		kind error
	}{
		{"window 0", second(replay.NewVCRS(0, 10)), tensor.ErrRange},
		{"window too large", second(replay.NewVCRS(replay.MaxWindow+1, 10)), tensor.ErrRange},
		{"no prompts", second(replay.NewVCRS(20, 0)), tensor.ErrRange},
		{"NaN reward", newVCRS(t, 2, 2).Observe(1, math.NaN()), tensor.ErrNonFinite},
		{"Inf reward", newVCRS(t, 2, 2).Observe(1, math.Inf(-1)), tensor.ErrNonFinite},
		{"quantile empty", second(newVCRS(t, 2, 2).Quantile(0.5)), tensor.ErrEmpty},
		{"quantile NaN", second(newVCRS(t, 2, 2).Quantile(math.NaN())), tensor.ErrRange},
		{"quantile > 1", second(newVCRS(t, 2, 2).Quantile(1.5)), tensor.ErrRange},
		{"histogram no bins", newVCRS(t, 2, 2).Histogram(nil, 0, 1), tensor.ErrEmpty},
		{"histogram lo = hi", newVCRS(t, 2, 2).Histogram(make([]int, 2), 1, 1), tensor.ErrRange},
		{"histogram Inf", newVCRS(t, 2, 2).Histogram(make([]int, 2), 0, math.Inf(1)), tensor.ErrRange},
	} {
		assert.ErrorIs(t, c.err, c.kind, c.name)
	}
	if _, ok := newVCRS(t, 2, 2).Position(5); ok {
		t.Error("Position of an untracked prompt is ok")
	}
}

func second[T any](_ T, err error) error { return err }
