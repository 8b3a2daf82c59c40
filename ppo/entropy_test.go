package ppo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// withEntropy adds a random per-token entropy to in.
func withEntropy(in ppo.Inputs[float64], seed uint64) ppo.Inputs[float64] {
	rng := rand.New(rand.NewPCG(seed, 3))
	in.Entropy = tensor.MustNew[float64](in.Logp.B, in.Logp.T)
	for i := range in.Entropy.Data {
		in.Entropy.Data[i] = 3 * rng.Float64()
	}
	return in
}

// TestEntropyGradients checks dLoss/dentropy and dLoss/dlogp against
// central differences, at every aggregation, with and without top-ρ
// masking (whose choice the small steps do not change).
func TestEntropyGradients(t *testing.T) {
	const h = 1e-6
	for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum} {
		for _, rho := range []float64{0, 0.2} {
			for _, mode := range []ppo.LossMode{ppo.Vanilla, ppo.GSPO, ppo.CISPO} {
				t.Run(fmt.Sprintf("%v/rho=%v/%v", agg, rho, mode), func(t *testing.T) {
					in := withEntropy(randomInputs(batchSpec{b: 4, t: 9, ref: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 101}), 1)
					in.EntropyGrad = tensor.MustNew[float64](4, 9)
					cfg := ppo.DefaultConfig()
					cfg.Mode, cfg.EntropyCoeff, cfg.EntropyTopRatio, cfg.KLCoef, cfg.LossMode = agg, 0.01, rho, 0.05, mode
					grad := make([]float64, in.Logp.Size())
					res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
					require.NoError(t, err)
					require.Greater(t, res.Entropy, 0.0)
					if rho > 0 {
						assert.Less(t, res.EntropyKeptFrac, 0.5)
					}
					fd := func(x []float64, k int) float64 {
						old := x[k]
						x[k] = old + h
						up := lossAt(t, in, cfg)
						x[k] = old - h
						down := lossAt(t, in, cfg)
						x[k] = old
						return (up - down) / (2 * h)
					}
					for k := range grad {
						if in.Mask.Data[k] == 0 {
							require.Zero(t, in.EntropyGrad.Data[k])
							continue
						}
						assert.Truef(t, relClose(in.EntropyGrad.Data[k], fd(in.Entropy.Data, k), 1e-6, 1e-9), "dentropy[%d]", k)
						if mode != ppo.CISPO { // CISPO's weight is a stop-gradient (TestLossModeGradients)
							assert.Truef(t, relClose(grad[k], fd(in.Logp.Data, k), 1e-5, 1e-8), "dlogp[%d]", k)
						}
					}
				})
			}
		}
	}
}

// TestEntropyTopRhoByHand: four tokens of entropy (0.5, 2, 2, 1) and ρ =
// 0.5 keep ⌊4·0.5 + ½⌋ = 2 tokens, those of entropy 2 (t = 1 and t = 2);
// with ρ = 0.25 one, the tie going to the lower index t = 1.
func TestEntropyTopRhoByHand(t *testing.T) {
	mk := func(v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, len(v))
		copy(b.Data, v)
		return b
	}
	in := ppo.Inputs[float64]{Logp: mk(-1, -1, -1, -1), OldLogp: mk(-1, -1, -1, -1), Advantages: mk(1, 2, 3, 4),
		Mask: mk(1, 1, 1, 1), Entropy: mk(0.5, 2, 2, 1)}
	cfg := ppo.DefaultConfig()
	cfg.EntropyTopRatio = 0.5
	grad := make([]float64, 4)
	res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, -0.5, -0.75, 0}, grad) // −A·r/N with r = 1, N = 4
	assert.InDelta(t, -(2+3)/4.0, res.Loss, 1e-15)
	assert.Equal(t, 0.5, res.EntropyKeptFrac)
	assert.InDelta(t, 5.5/4, res.Entropy, 1e-15)

	cfg.EntropyTopRatio = 0.25
	_, err = ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, -0.5, 0, 0}, grad)
}

func TestEntropyRejects(t *testing.T) {
	in := randomInputs(batchSpec{b: 2, t: 5, spread: 0.2, seed: 102})
	g := make([]float64, 10)
	cfg := ppo.DefaultConfig()
	cfg.EntropyCoeff = 0.01
	_, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrShape, "entropy coefficient without entropy")
	in = withEntropy(in, 2)
	for i := range in.Mask.Data {
		in.Mask.Data[i] = 1
	}
	in.Entropy.Data[7] = math.NaN()
	_, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.ErrorIs(t, err, tensor.ErrNonFinite)
	assert.Contains(t, err.Error(), "entropy[1,2]")
	in.Entropy.Data[7] = 1
	in.EntropyGrad = tensor.MustNew[float64](2, 4)
	_, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrShape)
	for _, bad := range []func(*ppo.Config){
		func(c *ppo.Config) { c.EntropyTopRatio = 1.5 },
		func(c *ppo.Config) { c.EntropyCoeff = math.Inf(1) },
		func(c *ppo.Config) { c.EntropyTopRatio, c.LossMode = 0.2, ppo.GeoMean },
	} {
		c := ppo.DefaultConfig()
		bad(&c)
		assert.ErrorIs(t, c.Validate(), tensor.ErrRange)
	}
}

// TestEntropyMicroBatchesAddUp: the entropy term is additive over
// micro-batches given the global counts, as the rest of the loss.
func TestEntropyMicroBatchesAddUp(t *testing.T) {
	in := withEntropy(randomInputs(batchSpec{b: 7, t: 12, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 103}), 3)
	in.EntropyGrad = tensor.MustNew[float64](7, 12)
	for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum} {
		cfg := ppo.DefaultConfig()
		cfg.Mode, cfg.EntropyCoeff = agg, 0.03
		res, err := ppo.PolicyLoss(gradBatch(make([]float64, in.Logp.Size()), in), in, cfg)
		require.NoError(t, err)
		whole := append([]float64(nil), in.EntropyGrad.Data...)
		cfg.TokenCount, cfg.SeqCount = float64(res.Tokens), float64(res.Sequences)
		var sum float64
		for _, cut := range [][2]int{{0, 3}, {3, 7}} {
			part := sliceInputs(in, cut[0], cut[1])
			part.Entropy, part.EntropyGrad = rowsOf(in.Entropy, cut[0], cut[1]), rowsOf(in.EntropyGrad, cut[0], cut[1])
			r, err := ppo.PolicyLoss(gradBatch(make([]float64, part.Logp.Size()), part), part, cfg)
			require.NoError(t, err)
			sum += r.Loss
		}
		assert.InDelta(t, res.Loss, sum, 1e-13, "%v", agg)
		assert.InDeltaSlice(t, whole, in.EntropyGrad.Data, 1e-15, "%v", agg)
	}
}

func TestEntropyAllocatesNothing(t *testing.T) {
	in := to32(withEntropy(randomInputs(batchSpec{b: 8, t: 64, spread: 0.3, seed: 104}), 4))
	in.EntropyGrad = tensor.MustNew[float32](8, 64)
	grad := make([]float32, in.Logp.Size())
	cfg := ppo.DefaultConfig()
	cfg.EntropyCoeff, cfg.EntropyTopRatio = 0.01, 0.2
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestEntropyGradMustNotOverlap: the entropy gradient is an output; sharing
// memory with an input or with the policy gradient is ErrOverlap.
func TestEntropyGradMustNotOverlap(t *testing.T) {
	in := withEntropy(randomInputs(batchSpec{b: 2, t: 5, spread: 0.2, seed: 113}), 2)
	cfg := ppo.DefaultConfig()
	cfg.EntropyCoeff = 0.01
	grad := tensor.MustNew[float64](2, 5)

	in.EntropyGrad = in.Entropy
	_, err := ppo.PolicyLoss(grad, in, cfg)
	assert.ErrorIs(t, err, tensor.ErrOverlap, "entropy_grad aliasing entropy")

	in.EntropyGrad = grad
	_, err = ppo.PolicyLoss(grad, in, cfg)
	assert.ErrorIs(t, err, tensor.ErrOverlap, "entropy_grad aliasing grad")

	in.EntropyGrad = tensor.MustNew[float64](2, 5)
	_, err = ppo.PolicyLoss(grad, in, cfg)
	assert.NoError(t, err)
}

// TestEntropyGradEmptyRowZeroed fills the EntropyGrad destination with
// garbage and checks that a row with no valid token, and every masked
// token, comes back 0: the destination is an output, whole.
func TestEntropyGradEmptyRowZeroed(t *testing.T) {
	for _, mode := range []ppo.LossMode{ppo.Vanilla, ppo.GSPO, ppo.CISPO, ppo.GeoMean} {
		in := withEntropy(randomInputs(batchSpec{b: 4, t: 9, emptyRow: true, seed: 7}), 2)
		in.EntropyGrad = tensor.MustNew[float64](4, 9)
		for i := range in.EntropyGrad.Data {
			in.EntropyGrad.Data[i] = 123
		}
		cfg := ppo.DefaultConfig()
		cfg.EntropyCoeff, cfg.LossMode = 0.01, mode
		grad := make([]float64, in.Logp.Size())
		_, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
		require.NoError(t, err, "%v", mode)
		empty := 0
		for b := range in.Mask.B {
			valid := 0
			for tok, m := range in.Mask.Row(b) {
				if m == 0 {
					assert.Zero(t, in.EntropyGrad.Row(b)[tok], "%v: row %d token %d is masked", mode, b, tok)
				} else {
					valid++
					assert.NotEqual(t, 123.0, in.EntropyGrad.Row(b)[tok], "%v: row %d token %d not written", mode, b, tok)
				}
			}
			if valid == 0 {
				empty++
			}
		}
		require.Positive(t, empty, "the batch must hold an empty row")
	}
}
