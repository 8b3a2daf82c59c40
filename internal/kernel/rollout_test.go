package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestRolloutTokensLayout pins the offsets the assembly reads.
func TestRolloutTokensLayout(t *testing.T) {
	var k RolloutTokens
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"Old", unsafe.Offsetof(k.Old), 0}, {"Roll", unsafe.Offsetof(k.Roll), 8},
		{"Mask", unsafe.Offsetof(k.Mask), 16}, {"TW", unsafe.Offsetof(k.TW), 24},
		{"EMask", unsafe.Offsetof(k.EMask), 32}, {"EW", unsafe.Offsetof(k.EW), 40},
		{"N", unsafe.Offsetof(k.N), 48}, {"Flags", unsafe.Offsetof(k.Flags), 56},
		{"ISCut", unsafe.Offsetof(k.ISCut), 64}, {"ISMax", unsafe.Offsetof(k.ISMax), 96},
		{"Lower", unsafe.Offsetof(k.Lower), 128}, {"Upper", unsafe.Offsetof(k.Upper), 160},
		{"LogRatio", unsafe.Offsetof(k.LogRatio), 192}, {"OldSum", unsafe.Offsetof(k.OldSum), 224},
		{"K3", unsafe.Offsetof(k.K3), 256}, {"Weights", unsafe.Offsetof(k.Weights), 288},
		{"Valid", unsafe.Offsetof(k.Valid), 320}, {"NonZero", unsafe.Offsetof(k.NonZero), 352},
		{"Truncated", unsafe.Offsetof(k.Truncated), 384}, {"Rejected", unsafe.Offsetof(k.Rejected), 416},
	} {
		if f.got != f.want {
			t.Errorf("offset of %s = %d, the assembly reads %d", f.name, f.got, f.want)
		}
	}
}

// rolloutInputs are float32 rows for the kernel: log-probs near −2, the
// rollout's up to ±0.3 away and now and then 25 nats (past the clamp),
// padding with −Inf and NaN log-probs, token weights in [0, 2).
type rolloutInputs struct {
	old, roll, mask, tw []float32
}

func newRolloutInputs(n int, seed uint64) rolloutInputs {
	rng := rand.New(rand.NewPCG(seed, 9))
	in := rolloutInputs{make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)}
	for i := range n {
		o := float32(-2 * rng.Float64())
		r := o + float32(0.6*rng.Float64()-0.3)
		switch rng.IntN(40) {
		case 0:
			r = o - 25
		case 1:
			r = o + 25
		}
		in.old[i], in.roll[i], in.tw[i] = o, r, float32(2*rng.Float64())
		if rng.IntN(5) > 0 {
			in.mask[i] = 1
		} else if rng.IntN(2) == 0 {
			in.old[i], in.roll[i] = float32(math.Inf(-1)), float32(math.NaN())
		}
	}
	return in
}

// rolloutRef is the contract of RolloutTokens in float64, from the float32
// log-ratio: the sums, the counts, and each token's mask and weight with
// e^ℓc exact.
type rolloutRef struct {
	sums                       [5]float64
	valid, truncated, rejected int
	em, ew                     []float64
}

func newRolloutRef(k *RolloutTokens, in rolloutInputs, isMax, lower, upper float64) rolloutRef {
	n := int(k.N) &^ 7
	ref := rolloutRef{em: make([]float64, n), ew: make([]float64, n)}
	for i := range n {
		w := 1.0
		if k.Flags&RolloutTW != 0 {
			w = float64(in.tw[i])
		}
		ref.em[i], ref.ew[i] = float64(in.mask[i]), w
		if in.mask[i] != 1 {
			continue
		}
		l := float64(in.old[i] - in.roll[i])
		lc := min(max(l, -20), 20)
		e := math.Exp(lc)
		ref.sums[0] += l
		ref.sums[1] += float64(in.old[i])
		ref.sums[2] += float64(in.roll[i])
		ref.sums[3] += math.Expm1(lc) - lc
		ref.valid++
		if k.Flags&RolloutIS != 0 {
			ref.sums[4] += e
			if e > isMax {
				ref.truncated++
			}
			ref.ew[i] = w * min(e, isMax)
		}
		if k.Flags&RolloutRS != 0 && !(e >= lower && e <= upper) {
			ref.em[i] = 0
			ref.rejected++
		}
	}
	return ref
}

// TestRolloutTokensMatchesFloat64: each token's effective mask is the
// float64 decision, its weight within float32 rounding of the float64 one,
// the counts equal, and the sums agree to float32 precision, for every
// setting the kernel has.
func TestRolloutTokensMatchesFloat64(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	const n = 1003 // the last 3 are the caller's
	in := newRolloutInputs(n, 1)
	inf := math.Inf(1)
	for _, c := range []struct {
		name         string
		tw, is, rs   bool
		isMax        float64
		lower, upper float64
	}{
		{"metrics only", false, false, false, 2, -inf, inf},
		{"token weights", false, true, false, 1.1, -inf, inf},
		{"token weights and tw", true, true, false, 1.7, -inf, inf},
		{"rejection", true, false, true, 2, 0.8, 1.2},
		{"both", false, true, true, 1.05, 0.9, 1.25},
	} {
		t.Run(c.name, func(t *testing.T) {
			flags := int64(RolloutEW | RolloutEM)
			for _, f := range []struct {
				on   bool
				flag int64
			}{{c.tw, RolloutTW}, {c.is, RolloutIS}, {c.rs, RolloutRS}} {
				if f.on {
					flags |= f.flag
				}
			}
			em, ew := make([]float32, n), make([]float32, n)
			k := RolloutTokens{Old: &in.old[0], Roll: &in.roll[0], Mask: &in.mask[0], TW: &in.tw[0],
				EMask: &em[0], EW: &ew[0], N: n, Flags: flags}
			k.RolloutBounds(c.isMax, c.lower, c.upper)
			ref := newRolloutRef(&k, in, c.isMax, c.lower, c.upper)
			if !k.Run() {
				t.Fatal("Run reported no kernel")
			}
			for i := range n &^ 7 {
				if float64(em[i]) != ref.em[i] && !(math.IsNaN(ref.em[i]) && em[i] != em[i]) {
					t.Fatalf("token %d: mask %v, want %v", i, em[i], ref.em[i])
				}
				if e := relErr(float64(ew[i]), ref.ew[i]); e > 2.5e-7 {
					t.Errorf("token %d: weight %v, want %v (relative error %.2g)", i, ew[i], ref.ew[i], e)
				}
			}
			for i := n &^ 7; i < n; i++ {
				if em[i] != 0 || ew[i] != 0 {
					t.Errorf("token %d, past N&^7, written", i)
				}
			}
			if Count(k.Valid) != ref.valid || Count(k.NonZero) != ref.valid || Count(k.Truncated) != ref.truncated || Count(k.Rejected) != ref.rejected {
				t.Errorf("counts valid, nonzero, truncated, rejected = %d, %d, %d, %d; want %d, %d, %d, %d",
					Count(k.Valid), Count(k.NonZero), Count(k.Truncated), Count(k.Rejected), ref.valid, ref.valid, ref.truncated, ref.rejected)
			}
			if c.is && ref.truncated == 0 || c.rs && ref.rejected == 0 {
				t.Error("nothing truncated or rejected: the case does not exercise it")
			}
			// The rollout's sum is old's less ℓ's.
			for i, s := range [...]float64{Sum(k.LogRatio), Sum(k.OldSum), Sum(k.OldSum) - Sum(k.LogRatio), Sum(k.K3), Sum(k.Weights)} {
				if e := relErr(s, ref.sums[i]); e > 1e-6 {
					t.Errorf("sum %d = %.9g, want %.9g (relative error %.2g)", i, s, ref.sums[i], e)
				}
			}
		})
	}
}

// TestRolloutTokensSmallK3: e^ℓ − ℓ − 1 ≈ ℓ²/2 keeps float32's relative
// precision for tiny mismatches, where e^ℓ − ℓ − 1 formed in float32
// would be all rounding error.
func TestRolloutTokensSmallK3(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	const n = 64
	for _, scale := range []float64{1e-2, 1e-4, 1e-6} {
		in := newRolloutInputs(n, 4)
		want := 0.0
		for i := range in.mask {
			in.mask[i] = 1
			in.old[i] = -1.5
			in.roll[i] = in.old[i] - float32(scale*float64(i%7-3))
			l := float64(in.old[i] - in.roll[i])
			want += math.Expm1(l) - l
		}
		em, ew := make([]float32, n), make([]float32, n)
		k := RolloutTokens{Old: &in.old[0], Roll: &in.roll[0], Mask: &in.mask[0], EMask: &em[0], EW: &ew[0], N: n}
		k.RolloutBounds(2, math.Inf(-1), math.Inf(1))
		k.Run()
		if e := relErr(Sum(k.K3), want); e > 1e-6 {
			t.Errorf("ℓ ~ %g: k3 sum %.9g, want %.9g (relative error %.2g)", scale, Sum(k.K3), want, e)
		}
	}
}

// TestRolloutTokensFlagsBad: a non-finite log-prob on a valid token makes
// the log-ratio sum non-finite, and a mask value neither 0 nor 1 makes the
// nonzero count differ from the valid one; the same on a padding token
// does neither.
func TestRolloutTokensFlagsBad(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	const n = 16
	for _, c := range []struct {
		name string
		set  func(in rolloutInputs)
		bad  bool
	}{
		{"padding", func(in rolloutInputs) { in.mask[5], in.old[5] = 0, float32(math.NaN()) }, false},
		{"nan old", func(in rolloutInputs) { in.mask[5], in.old[5] = 1, float32(math.NaN()) }, true},
		{"-inf rollout", func(in rolloutInputs) { in.mask[9], in.roll[9] = 1, float32(math.Inf(-1)) }, true},
		{"overflow", func(in rolloutInputs) { in.mask[9], in.old[9], in.roll[9] = 1, 3e38, -3e38 }, true},
		{"mask 0.5", func(in rolloutInputs) { in.mask[2] = 0.5 }, true},
		{"mask nan", func(in rolloutInputs) { in.mask[14] = float32(math.NaN()) }, true},
	} {
		in := newRolloutInputs(n, 2)
		for i := range in.mask {
			in.old[i], in.roll[i] = -1, -1.5
		}
		c.set(in)
		em, ew := make([]float32, n), make([]float32, n)
		k := RolloutTokens{Old: &in.old[0], Roll: &in.roll[0], Mask: &in.mask[0], EMask: &em[0], EW: &ew[0], N: n}
		k.RolloutBounds(2, math.Inf(-1), math.Inf(1))
		k.Run()
		l := Sum(k.LogRatio)
		bad := l-l != 0 || Count(k.Valid) != Count(k.NonZero)
		if bad != c.bad {
			t.Errorf("%s: flagged %v, want %v", c.name, bad, c.bad)
		}
	}
}

// BenchmarkRolloutTokens times the kernel on a row of 4096 tokens with
// token-level weights on.
func BenchmarkRolloutTokens(b *testing.B) {
	const n = 4096
	in := newRolloutInputs(n, 3)
	em, ew := make([]float32, n), make([]float32, n)
	for b.Loop() {
		k := RolloutTokens{Old: &in.old[0], Roll: &in.roll[0], Mask: &in.mask[0], EMask: &em[0], EW: &ew[0], N: n,
			Flags: RolloutIS | RolloutEW}
		k.RolloutBounds(2, math.Inf(-1), math.Inf(1))
		k.Run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/token")
}
