package ppo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// packedCase is one batch of ragged rows in both layouts: padded to the
// longest row (padding holds garbage and mask 0) and packed with cu_seqlens.
type packedCase[F tensor.Float] struct {
	padded, packed ppo.Inputs[F]
	lengths        []int
}

// raggedLengths draws b row lengths in [0, maxLen], 0 and 1 among them.
func raggedLengths(rng *rand.Rand, b, maxLen int) []int {
	n := make([]int, b)
	for i := range n {
		n[i] = rng.IntN(maxLen + 1)
	}
	n[0], n[1%b] = 0, 1
	n[b-1] = maxLen
	return n
}

// newPackedCase lays random rows of the given lengths out both ways; the
// optional inputs are those spec asks for, plus entropy and rollout
// log-probabilities when asked.
func newPackedCase[F tensor.Float](lengths []int, spec batchSpec, entropy, rollout bool) packedCase[F] {
	rng := rand.New(rand.NewPCG(spec.seed, 11))
	off := make([]int, len(lengths)+1)
	T := 0
	for b, n := range lengths {
		off[b+1] = off[b] + n
		T = max(T, n)
	}
	B, N := len(lengths), off[len(lengths)]
	var c packedCase[F]
	c.lengths = lengths
	pair := func(on bool) (tensor.Batch[F], tensor.Batch[F]) {
		if !on {
			return tensor.Batch[F]{}, tensor.Batch[F]{}
		}
		p, err := tensor.Packed(make([]F, N), off)
		if err != nil {
			panic(err)
		}
		return tensor.MustNew[F](B, T), p
	}
	c.padded.Logp, c.packed.Logp = pair(true)
	c.padded.OldLogp, c.packed.OldLogp = pair(true)
	c.padded.Advantages, c.packed.Advantages = pair(true)
	c.padded.Mask, c.packed.Mask = pair(true)
	c.padded.ProxLogp, c.packed.ProxLogp = pair(spec.prox)
	c.padded.RefLogp, c.packed.RefLogp = pair(spec.ref)
	c.padded.TokenWeights, c.packed.TokenWeights = pair(spec.weights)
	c.padded.Entropy, c.packed.Entropy = pair(entropy)
	c.padded.EntropyGrad, c.packed.EntropyGrad = pair(entropy)
	c.padded.RolloutLogp, c.packed.RolloutLogp = pair(rollout)
	set := func(x, y tensor.Batch[F], b, t int, v float64) {
		if !x.IsZero() {
			x.Set(b, t, F(v))
			y.Set(b, t, F(v))
		}
	}
	garbage := func(x tensor.Batch[F], b, t int, v float64) {
		if !x.IsZero() {
			x.Set(b, t, F(v))
		}
	}
	p, q := &c.padded, &c.packed
	for b, n := range lengths {
		a := rng.NormFloat64()
		for t := range T {
			if t >= n {
				garbage(p.Logp, b, t, math.Inf(-1))
				garbage(p.OldLogp, b, t, math.NaN())
				garbage(p.Advantages, b, t, math.NaN())
				garbage(p.RefLogp, b, t, math.Inf(1))
				garbage(p.TokenWeights, b, t, -1)
				garbage(p.Entropy, b, t, math.NaN())
				continue
			}
			lp := -0.2 - rng.ExpFloat64()
			set(p.Logp, q.Logp, b, t, lp)
			set(p.OldLogp, q.OldLogp, b, t, lp+spec.spread*rng.NormFloat64())
			set(p.Advantages, q.Advantages, b, t, a+0.3*rng.NormFloat64())
			set(p.ProxLogp, q.ProxLogp, b, t, lp+spec.spread*rng.NormFloat64())
			set(p.RefLogp, q.RefLogp, b, t, lp+0.5*rng.NormFloat64())
			set(p.TokenWeights, q.TokenWeights, b, t, 0.5+rng.Float64())
			set(p.Entropy, q.Entropy, b, t, 3*rng.Float64())
			set(p.RolloutLogp, q.RolloutLogp, b, t, lp+0.2*rng.NormFloat64())
			m := 1.0
			if spec.nonPrefix && rng.IntN(4) == 0 {
				m = 0
			}
			set(p.Mask, q.Mask, b, t, m)
		}
	}
	return c
}

// packedConfigs are the gradient tests' configurations and one of each
// loss mode, entropy and rollout-correction option.
func packedConfigs() []struct {
	name             string
	spec             batchSpec
	entropy, rollout bool
	cfg              ppo.Config
} {
	type pc = struct {
		name             string
		spec             batchSpec
		entropy, rollout bool
		cfg              ppo.Config
	}
	var cases []pc
	for _, c := range gradCases() {
		c.spec.nonPrefix = true
		cases = append(cases, pc{c.name, c.spec, false, false, c.cfg})
	}
	base := ppo.DefaultConfig()
	with := func(f func(*ppo.Config)) ppo.Config { c := base; f(&c); return c }
	spec := batchSpec{prox: true, ref: true, weights: true, spread: 0.4, nonPrefix: true, seed: 21}
	for _, m := range []ppo.LossMode{ppo.CISPO, ppo.SAPO, ppo.GPG, ppo.ClipCov, ppo.KLCov} {
		cases = append(cases, pc{m.String(), spec, false, false, with(func(c *ppo.Config) {
			c.LossMode, c.KLCoef = m, 0.05
			c.ClipCovRatio, c.KLCovRatio = 0.1, 0.1
		})})
	}
	cases = append(cases,
		pc{"geo_mean", batchSpec{ref: true, spread: 0.3, nonPrefix: true, seed: 22}, false, false,
			with(func(c *ppo.Config) { c.LossMode, c.Mode, c.KLCoef = ppo.GeoMean, ppo.SeqMeanTokenMean, 0.05 })},
		pc{"sum-norm-default-C", spec, false, false, with(func(c *ppo.Config) { c.Mode = ppo.SeqMeanTokenSumNorm })},
		pc{"entropy/top-ratio", spec, true, false,
			with(func(c *ppo.Config) { c.EntropyCoeff, c.EntropyTopRatio = 0.01, 0.5 })},
		pc{"rollout-is-token/rs-geometric", spec, false, true, with(func(c *ppo.Config) {
			c.RolloutIS, c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutToken, ppo.RolloutGeometric, 1.1
		})},
		pc{"rollout-is-seq/off-policy-mask", spec, false, true, with(func(c *ppo.Config) {
			c.RolloutIS, c.OffPolicySeqMaskKL = ppo.RolloutSequence, 0.01
		})},
	)
	return cases
}

// checkPackedMatchesPadded runs one case both ways and requires the same
// Result and, row by row, the same gradient bits (0 in the padding).
func checkPackedMatchesPadded[F tensor.Float](t *testing.T, c packedCase[F], cfg ppo.Config, exact bool) {
	t.Helper()
	if cfg.KLCoef == 0 { // an unread reference is an error
		c.padded.RefLogp, c.packed.RefLogp = tensor.Batch[F]{}, tensor.Batch[F]{}
	}
	gp := tensor.MustNew[F](c.padded.Logp.B, c.padded.Logp.T)
	gq, err := tensor.Packed(make([]F, c.packed.Logp.Len()), c.packed.Logp.Offsets)
	require.NoError(t, err)
	want, err := ppo.PolicyLoss(gp, c.padded, cfg)
	require.NoError(t, err)
	got, err := ppo.PolicyLoss(gq, c.packed, cfg)
	require.NoError(t, err)
	if exact {
		require.Equal(t, want, got)
	} else {
		require.InDelta(t, want.Loss, got.Loss, 1e-6*math.Abs(want.Loss)+1e-7)
		require.Equal(t, want.Tokens, got.Tokens)
	}
	for b, n := range c.lengths {
		row := gp.Row(b)
		for k, v := range row[n:] {
			require.Zerof(t, v, "padding grad (%d, %d)", b, n+k)
		}
		if exact {
			require.Equalf(t, row[:n], gq.Row(b), "grad row %d", b)
			if !c.padded.EntropyGrad.IsZero() {
				require.Equalf(t, c.padded.EntropyGrad.Row(b)[:n], c.packed.EntropyGrad.Row(b), "entropy grad row %d", b)
			}
		} else {
			for k, v := range gq.Row(b) {
				require.InDeltaf(t, float64(row[k]), float64(v), 2e-6*math.Abs(float64(row[k]))+1e-9, "grad (%d, %d)", b, k)
			}
		}
	}
}

// TestPackedMatchesPadded: a packed batch gives exactly the bits of the
// same rows padded to the longest, in every mode, in float64 and in float32
// through the Go loop.
func TestPackedMatchesPadded(t *testing.T) {
	defer ppo.SetKernelLanes(ppo.SetKernelLanes(0))
	for _, c := range packedConfigs() {
		for trial := range 3 {
			rng := rand.New(rand.NewPCG(uint64(trial), c.spec.seed))
			lengths := raggedLengths(rng, 6, 5+rng.IntN(30))
			c.spec.seed += 100
			t.Run(fmt.Sprintf("%s/%v", c.name, lengths), func(t *testing.T) {
				checkPackedMatchesPadded(t, newPackedCase[float64](lengths, c.spec, c.entropy, c.rollout), c.cfg, true)
				checkPackedMatchesPadded(t, newPackedCase[float32](lengths, c.spec, c.entropy, c.rollout), c.cfg, true)
			})
		}
	}
}

// TestPackedMatchesPaddedAVX2: through each assembly kernel, rows whose
// lengths are multiples of 8 give the padded bits exactly (the kernel sees
// the same lanes); other lengths run their last n mod 8 tokens through the
// Go loop where the padded row ran them through the kernel, so gradients
// and loss agree to float32 rounding.
func TestPackedMatchesPaddedAVX2(t *testing.T) {
	if !kernel.HasAVX2 {
		t.Skip("no AVX2 kernel on this processor or build")
	}
	for _, lanes := range kernelWidths() {
		defer ppo.SetKernelLanes(ppo.SetKernelLanes(lanes))
		for _, c := range packedConfigs() {
			rng := rand.New(rand.NewPCG(5, c.spec.seed))
			eights := []int{0, 8, 16, 40, 8, 0, 24}
			t.Run(fmt.Sprintf("%s/%d lanes", c.name, lanes), func(t *testing.T) {
				checkPackedMatchesPadded(t, newPackedCase[float32](eights, c.spec, c.entropy, c.rollout), c.cfg, true)
				ragged := raggedLengths(rng, 7, 45)
				checkPackedMatchesPadded(t, newPackedCase[float32](ragged, c.spec, c.entropy, c.rollout), c.cfg, false)
			})
		}
	}
}

func TestPackedPolicyLossAllocatesNothing(t *testing.T) {
	lengths := []int{0, 1, 37, 200, 9, 64}
	for _, lanes := range append([]int{0}, kernelWidths()...) {
		defer ppo.SetKernelLanes(ppo.SetKernelLanes(lanes))
		c := newPackedCase[float32](lengths, batchSpec{ref: true, spread: 0.3, seed: 3}, false, false)
		g, err := tensor.Packed(make([]float32, c.packed.Logp.Len()), c.packed.Logp.Offsets)
		require.NoError(t, err)
		cfg := ppo.DefaultConfig()
		cfg.KLCoef = 0.1
		if _, err := ppo.PolicyLoss(g, c.packed, cfg); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() { _, _ = ppo.PolicyLoss(g, c.packed, cfg) })
		require.Zerof(t, allocs, "%d lanes", lanes)
	}
}

func TestPackedLayoutErrors(t *testing.T) {
	c := newPackedCase[float64]([]int{3, 0, 2}, batchSpec{seed: 1}, false, false)
	g, _ := tensor.Packed(make([]float64, 5), c.packed.Logp.Offsets)
	in := c.packed
	in.Mask = c.padded.Mask
	_, err := ppo.PolicyLoss(g, in, ppo.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrShape)
	require.ErrorContains(t, err, "mask")
	require.ErrorContains(t, err, "one layout")

	in = c.packed
	in.Mask, _ = tensor.Packed(c.packed.Mask.Data, []int{0, 2, 2, 5})
	_, err = ppo.PolicyLoss(g, in, ppo.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrShape)
	require.ErrorContains(t, err, "mask.cu_seqlens[1]")

	_, err = ppo.PolicyLoss(c.padded.Logp, c.packed, ppo.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrShape, "padded grad for a packed batch")

	bad := c.packed
	bad.Logp.Data[4] = math.NaN() // row 2, column 1
	_, err = ppo.PolicyLoss(g, bad, ppo.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrNonFinite)
	require.ErrorContains(t, err, "logp[2,1]")

	v := ppo.ValueInputs[float64]{Values: c.packed.Logp, Returns: c.packed.OldLogp, Mask: c.packed.Mask, OldValues: c.padded.Advantages}
	_, err = ppo.ValueLoss(g, v, ppo.DefaultValueConfig())
	require.ErrorIs(t, err, tensor.ErrShape, "padded old values beside packed values")
	require.ErrorContains(t, err, "old_values")
}

// TestPackedValueLossMatchesPadded: the critic loss gives a packed batch
// the bits of the same rows padded, clipped or not, and allocates nothing.
func TestPackedValueLossMatchesPadded(t *testing.T) {
	for trial := range 4 {
		rng := rand.New(rand.NewPCG(uint64(trial), 4))
		lengths := raggedLengths(rng, 7, 3+rng.IntN(40))
		for _, mode := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSumNorm} {
			for _, clip := range []float64{0, 0.2} {
				t.Run(fmt.Sprintf("%v/%v/clip=%v", lengths, mode, clip), func(t *testing.T) {
					testPackedValue[float32](t, lengths, mode, clip, uint64(trial))
					testPackedValue[float64](t, lengths, mode, clip, uint64(trial))
				})
			}
		}
	}
}

func testPackedValue[F tensor.Float](t *testing.T, lengths []int, mode ppo.Aggregation, clip float64, seed uint64) {
	// Logp, OldLogp and Advantages of a policy case serve as values,
	// old values and returns.
	c := newPackedCase[F](lengths, batchSpec{spread: 0.3, nonPrefix: true, seed: seed}, false, false)
	cfg := ppo.DefaultValueConfig()
	cfg.Clip, cfg.Mode = clip, mode
	val := func(in ppo.Inputs[F]) ppo.ValueInputs[F] {
		v := ppo.ValueInputs[F]{Values: in.Logp, Returns: in.Advantages, Mask: in.Mask}
		if clip > 0 {
			v.OldValues = in.OldLogp
		}
		return v
	}
	gp := tensor.MustNew[F](c.padded.Logp.B, c.padded.Logp.T)
	gq, err := tensor.Packed(make([]F, c.packed.Logp.Len()), c.packed.Logp.Offsets)
	require.NoError(t, err)
	want, err := ppo.ValueLoss(gp, val(c.padded), cfg)
	require.NoError(t, err)
	got, err := ppo.ValueLoss(gq, val(c.packed), cfg)
	require.NoError(t, err)
	require.Equal(t, want, got)
	for b, n := range lengths {
		require.Equalf(t, gp.Row(b)[:n], gq.Row(b), "grad row %d", b)
	}
	require.Zero(t, testing.AllocsPerRun(10, func() { _, _ = ppo.ValueLoss(gq, val(c.packed), cfg) }))
}
