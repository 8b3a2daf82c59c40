package replay_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
)

// fuzzBytes hands out values from fuzz input, then zeros.
type fuzzBytes struct{ data []byte }

func (r *fuzzBytes) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *fuzzBytes) intn(n int) int { return int(r.byte()) % n }

// float returns mostly ordinary numbers, sometimes the edge cases.
func (r *fuzzBytes) float() float64 {
	switch v := r.byte(); {
	case v < 200:
		return float64(int(v)-100) / 40
	case v < 205:
		return math.NaN()
	case v < 210:
		return math.Inf(1 - 2*int(v&1))
	case v < 220:
		return float64(v-210) * 1e307
	case v < 230:
		var b [8]byte
		for i := range b {
			b[i] = r.byte()
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	default:
		return 0
	}
}

// checkBuffer fails t unless b's counters add up and it survives a
// snapshot round trip, a sample and an add.
func checkBuffer(t *testing.T, b *replay.Buffer) {
	t.Helper()
	st := b.Stats()
	var held, gone uint64
	for i := range st.Len {
		if st.Len[i] > st.Capacity[i] {
			t.Fatalf("%v tier holds %d of %d", replay.Tier(i), st.Len[i], st.Capacity[i])
		}
		held += uint64(st.Len[i])
		gone += st.Evicted[i] + st.Expired[i]
	}
	if st.Offered != held+gone+st.StaleOnArrival {
		t.Fatalf("offered %d ≠ %d held + %d gone + %d stale", st.Offered, held, gone, st.StaleOnArrival)
	}
	var buf bytes.Buffer
	if err := b.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	c, err := replay.Restore(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("a buffer's own snapshot does not restore: %v", err)
	}
	var again bytes.Buffer
	c.Snapshot(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatal("snapshot round trip is not exact")
	}
	dst := make([]replay.Sampled, 3)
	n, err := c.Sample(dst, rand.New(rand.NewPCG(1, 2)), replay.SampleOptions{})
	if err != nil || n > c.Len() {
		t.Fatalf("Sample: %d of %d, %v", n, c.Len(), err)
	}
	for _, s := range dst[:n] {
		if !isFinite(s.Baseline) || !isFinite(s.Reward) || len(s.Logp) == 0 {
			t.Fatalf("sampled a broken experience %+v", s)
		}
	}
	if _, err := c.Add(exp(1, 0, st.Version)); err != nil {
		t.Fatal(err)
	}
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// FuzzRestore: any bytes restore to a working buffer or give an error,
// never a panic. Inputs are tried as they are and with their length and
// checksum repaired, so that the decoder behind the checksum is reached.
func FuzzRestore(f *testing.F) {
	var buf bytes.Buffer
	rich(f).Snapshot(&buf)
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:len(buf.Bytes())/2])
	buf.Reset()
	newBuffer(f, nil).Snapshot(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte("RLPRPLY\x00"))
	// The configuration fields at their extremes, where a decoder that
	// sizes from them before checking runs out of memory.
	buf.Reset()
	newBuffer(f, func(c *replay.Config) { c.Capacity, c.MaxPrompts, c.Window = 1<<30, 1<<31-1, replay.MaxWindow }).Snapshot(&buf)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		v2 := bytes.Clone(data)
		repairAll(v2)
		for _, d := range [][]byte{data, repaired(data), v2} {
			b, err := replay.Restore(bytes.NewReader(d))
			if err != nil {
				if b != nil {
					t.Fatal("a buffer and an error")
				}
				continue
			}
			checkBuffer(t, b)
		}
	})
}

// repaired returns data as a format-1 snapshot (no header checksum) with a
// valid header, length and checksum.
func repaired(data []byte) []byte {
	d := append([]byte("RLPRPLY\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), data...)
	d = append(d, 0, 0, 0, 0)
	if len(data) >= 20 { // keep the input's own header if it has one
		d = append(data[:20:20], d[20:]...)
		copy(d, "RLPRPLY\x00\x01\x00\x00\x00")
	}
	binary.LittleEndian.PutUint64(d[12:], uint64(len(d)))
	body := d[:len(d)-4]
	binary.LittleEndian.PutUint32(d[len(body):], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return d
}

// FuzzBuffer drives a small buffer through a fuzzed sequence of adds,
// groups, observations, version moves, samples and hint checks; every call
// returns or errs cleanly and the accounting always adds up.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 3, 1, 1, 1})
	f.Add([]byte{5, 17, 3, 0, 0, 1, 255, 4, 9, 9, 2, 201, 0, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzBytes{data}
		cfg := replay.Config{
			Capacity:     3 + r.intn(20),
			Shares:       replay.TierWeights{0.25, 0.35, 0.4},
			Window:       1 + r.intn(5),
			MaxPrompts:   1 + r.intn(6),
			MaxStaleness: int64(r.intn(4)),
		}
		b, err := replay.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h, hintErr := replay.NewHinter(b, replay.HintConfig{Below: r.float(), MinRewards: 1, MaxKL: 0.5, MaxPerPrompt: 2},
			replay.HintFunc(func(context.Context, uint64) (string, error) { return "h", nil }))
		rng := rand.New(rand.NewPCG(3, 4))
		dst := make([]replay.Sampled, 4)
		for len(r.data) > 0 {
			switch r.intn(7) {
			case 0, 1:
				e := replay.Experience{Prompt: uint64(r.intn(9)), Reward: r.float(), Version: int64(r.intn(12)) - 1}
				e.Logp = make([]float32, r.intn(4))
				for i := range e.Logp {
					e.Logp[i] = float32(r.float())
				}
				b.Add(e)
			case 2:
				g := make([]replay.Experience, 1+r.intn(4))
				for i := range g {
					g[i] = exp(uint64(r.intn(9)), r.float(), int64(r.intn(12)))
				}
				b.AddGroup(nil, g)
			case 3:
				b.Observe(uint64(r.intn(9)), r.float())
			case 4:
				b.SetVersion(int64(r.intn(15)))
			case 5:
				w := replay.TierWeights{r.float(), r.float(), r.float()}
				n, err := b.Sample(dst[:r.intn(5)], rng, replay.SampleOptions{Weights: w, Replace: r.byte()&1 == 1})
				if err == nil && n > 0 && !isFinite(dst[0].Baseline) {
					t.Fatalf("baseline %v", dst[0].Baseline)
				}
			case 6:
				if hintErr == nil {
					h.Hint(context.Background(), uint64(r.intn(9)), r.float())
				}
			}
		}
		checkBuffer(t, b)
	})
}

// FuzzAdvantages: Eq. 11 on any numbers returns finite advantages or an
// error.
func FuzzAdvantages(f *testing.F) {
	f.Add([]byte{10, 20, 30, 40, 50, 60}, 1e-6)
	f.Add([]byte{100, 100, 100, 0, 0}, 0.0)
	f.Fuzz(func(t *testing.T, data []byte, eps float64) {
		r := &fuzzBytes{data}
		n := len(data) / 2
		rewards, baselines := make([]float32, n), make([]float32, n)
		for i := range n {
			rewards[i], baselines[i] = float32(r.float()), float32(r.float())
		}
		dst := make([]float32, n)
		st, err := replay.Advantages(dst, rewards, baselines, replay.AdvantageConfig{Eps: eps})
		if err != nil {
			return
		}
		nz := 0
		for i, a := range dst {
			if !tensor.IsFinite(a) {
				t.Fatalf("advantage %d = %v", i, a)
			}
			if a != 0 {
				nz++
			}
		}
		if nz != st.Nonzero || st.N != n || st.Std < 0 {
			t.Fatalf("stats %+v for %d non-zero", st, nz)
		}
	})
}

// FuzzCurriculum: any schedule and progress give valid weights or an
// error.
func FuzzCurriculum(f *testing.F) {
	f.Add([]byte{0, 50, 30, 20, 255, 10, 40, 50}, 0.3)
	f.Fuzz(func(t *testing.T, data []byte, progress float64) {
		r := &fuzzBytes{data}
		var c replay.Curriculum
		for len(r.data) > 0 {
			c.Points = append(c.Points, replay.CurriculumPoint{
				Progress: float64(r.byte()) / 255,
				Weights:  replay.TierWeights{r.float(), r.float(), r.float()},
			})
		}
		w, err := c.Weights(progress)
		if err != nil {
			return
		}
		if err := w.Validate(); err != nil || w[0]+w[1]+w[2] == 0 {
			t.Fatalf("weights %v at %v: %v", w, progress, err)
		}
	})
}

// FuzzStep: the hybrid objective on fuzzed shapes, masks, log-probs and
// rewards returns a finite loss and gradient or an error.
func FuzzStep(f *testing.F) {
	f.Add([]byte{2, 3, 2, 1, 1, 0, 1, 1, 1, 50, 60, 70, 80, 90, 100, 110}, 0.5)
	f.Fuzz(func(t *testing.T, data []byte, alpha float64) {
		r := &fuzzBytes{data}
		bOn, k, bOff, T := r.intn(5), 1+r.intn(3), r.intn(4), 1+r.intn(6)
		batch := func(b int, mask bool) tensor.Batch[float32] {
			x := tensor.MustNew[float32](b, T)
			for i := range x.Data {
				if mask {
					x.Data[i] = float32(r.intn(3) / 2 * 1) // mostly 0/1
					if r.intn(10) == 0 {
						x.Data[i] = 0.5
					}
				} else {
					x.Data[i] = float32(r.float())
				}
			}
			return x
		}
		on := replay.OnPolicy[float32]{Logp: batch(bOn, false), OldLogp: batch(bOn, false), Mask: batch(bOn, true), Groups: grpo.Contiguous(k)}
		on.Rewards = make([]float32, bOn)
		for i := range on.Rewards {
			on.Rewards[i] = float32(r.float())
		}
		off := replay.OffPolicy[float32]{Logp: batch(bOff, false), Mask: batch(bOff, true)}
		for i := range bOff {
			n := 0
			for _, v := range off.Mask.Row(i) {
				if v != 0 {
					n++
				}
			}
			if r.intn(8) == 0 {
				n++ // a mismatch
			}
			s := replay.Sampled{Baseline: r.float()}
			s.Reward = r.float()
			s.Logp = make([]float32, n)
			for j := range s.Logp {
				s.Logp[j] = float32(r.float())
			}
			off.Samples = append(off.Samples, s)
		}
		cfg := replay.DefaultObjectiveConfig()
		cfg.Alpha, cfg.Loss.KLCoef = alpha, 0
		o, err := replay.NewObjective[float32](cfg)
		if err != nil {
			return
		}
		gOn, gOff := make([]float32, on.Logp.Size()), make([]float32, off.Logp.Size())
		res, err := o.Step(like(gOn, on.Logp), like(gOff, off.Logp), on, off)
		if err != nil {
			return
		}
		if !isFinite(res.Loss) {
			t.Fatalf("loss %v", res.Loss)
		}
		for _, g := range append(gOn, gOff...) {
			if !tensor.IsFinite(g) {
				t.Fatalf("gradient %v", g)
			}
		}
		for _, kl := range o.OffKL() {
			if !isFinite(kl) || kl < 0 {
				t.Fatalf("KL estimate %v", kl)
			}
		}
	})
}

// FuzzVCRS compares the tracker with the naive window mean under fuzzed
// rewards and evictions, and checks ranks stay in range.
func FuzzVCRS(f *testing.F) {
	f.Add([]byte{3, 2, 1, 10, 2, 20, 1, 30, 3, 40, 2, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzBytes{data}
		lo, hi := r.float(), r.float()
		w := 1 + r.intn(6)
		v, _ := replay.NewVCRS(w, 1000)
		ref := &naive{w: w, rewards: map[uint64][]float64{}}
		for len(r.data) > 0 {
			p, x := uint64(r.intn(7)), r.float()
			if err := v.Observe(p, x); err != nil {
				if math.Abs(x) <= replay.MaxAbsReward {
					t.Fatal(err)
				}
				continue
			}
			ref.observe(p, x)
			got, _, _ := v.Mean(p)
			want, _ := ref.mean(p)
			// The running sum and the naive one round differently; the
			// error is bounded by a few ulps of the largest reward in
			// the last two windows.
			scale := 0.0
			for _, x := range ref.rewards[p][max(0, len(ref.rewards[p])-2*w):] {
				scale = max(scale, math.Abs(x))
			}
			if math.Abs(got-want) > 1e-13*scale*float64(w) {
				t.Fatalf("Mean(%d) = %v, want %v", p, got, want)
			}
			if pos, ok := v.Position(p); !ok || !(pos >= 0 && pos < 1) {
				t.Fatalf("Position(%d) = %v, %v", p, pos, ok)
			}
		}
		if v.Len() > 0 {
			lo, _ := v.Quantile(0)
			hi, _ := v.Quantile(1)
			if lo > hi {
				t.Fatalf("quantiles %v > %v", lo, hi)
			}
		}
		hist := make([]int, 1+r.intn(9))
		if err := v.Histogram(hist, lo, hi); err == nil {
			n := 0
			for _, c := range hist {
				if c < 0 {
					t.Fatalf("histogram %v", hist)
				}
				n += c
			}
			if n != v.Len() {
				t.Fatalf("histogram counts %d of %d prompts", n, v.Len())
			}
		}
	})
}

// FuzzNew: any configuration makes a working buffer or an error.
func FuzzNew(f *testing.F) {
	f.Add(10000, 0.25, 0.35, 0.4, 20, 1<<20, int64(0))
	f.Add(3, 0.3, 0.3, 0.4, 1, 1, int64(4))
	f.Fuzz(func(t *testing.T, capacity int, easy, medium, hard float64, window, prompts int, eta int64) {
		if capacity > 1<<12 || prompts > 1<<16 {
			return // valid, but the rings would take the fuzzer's memory
		}
		b, err := replay.New(replay.Config{
			Capacity: capacity, Shares: replay.TierWeights{easy, medium, hard},
			Window: window, MaxPrompts: prompts, MaxStaleness: eta,
		})
		if err != nil {
			return
		}
		st := b.Stats()
		if st.Capacity[0]+st.Capacity[1]+st.Capacity[2] != capacity || min(st.Capacity[0], st.Capacity[1], st.Capacity[2]) < 1 {
			t.Fatalf("capacities %v of %d", st.Capacity, capacity)
		}
		for i := range 2 * capacity {
			if _, err := b.Add(exp(uint64(i%7), float64(i%2), 0)); err != nil {
				t.Fatal(err)
			}
		}
		checkBuffer(t, b)
	})
}
