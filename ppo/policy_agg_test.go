package ppo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// policyAggModes are the configurations Config.PolicySeqMeanTokenMean is
// defined for: the loss modes with a row of their own and the sequence
// ratio of the vanilla surrogate.
var policyAggModes = []struct {
	name string
	set  func(*ppo.Config)
}{
	{"gspo", func(c *ppo.Config) { c.LossMode = ppo.GSPO }},
	{"gspo_token", func(c *ppo.Config) { c.LossMode = ppo.GSPOToken }},
	{"vanilla/sequence", func(c *ppo.Config) { c.RatioLevel = ppo.SequenceRatio }},
	{"sapo", func(c *ppo.Config) { c.LossMode = ppo.SAPO }},
	{"cispo", func(c *ppo.Config) { c.LossMode = ppo.CISPO }},
	{"gpg", func(c *ppo.Config) { c.LossMode = ppo.GPG }},
	{"kl_cov", func(c *ppo.Config) { c.LossMode, c.KLCovRatio = ppo.KLCov, 0.2 }},
}

var allAggregations = []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum}

// TestPolicySeqMeanTokenMeanGradients checks dLoss/dlogp and dLoss/dentropy
// against central differences in float64 with the policy term aggregated
// seq-mean-token-mean and the KL and entropy terms under each aggregation
// (verl's gspo and sapo beside its loss_agg_mode), a row without a valid
// token included. GSPO-token's gradient is GSPO's derivative when a
// sequence's tokens share one advantage and weight, and is checked there.
// Under SeqMeanTokenMean the option changes nothing; under
// the others it changes the loss.
func TestPolicySeqMeanTokenMeanGradients(t *testing.T) {
	const h = 1e-6
	for k, agg := range allAggregations {
		for _, m := range policyAggModes {
			t.Run(fmt.Sprintf("%s/%v", m.name, agg), func(t *testing.T) {
				cfg := ppo.DefaultConfig()
				m.set(&cfg)
				tokenGrad := cfg.LossMode == ppo.GSPOToken
				spec := batchSpec{b: 5, t: 8, ref: true, weights: !tokenGrad, spread: 0.4, nonPrefix: true, seed: uint64(300 + k)}
				in := withEntropy(randomInputs(spec), uint64(k))
				if tokenGrad {
					sequenceAdvantages(in)
				}
				in.EntropyGrad = tensor.MustNew[float64](5, 8)
				clear(in.Mask.Row(2))
				cfg.Mode, cfg.KLCoef, cfg.EntropyCoeff = agg, 0.05, 0.01
				cfg.ClipLow, cfg.ClipHigh = 0.1, 0.15
				one, err := ppo.PolicyLoss(like(make([]float64, in.Logp.Size()), in.Logp), in, cfg)
				require.NoError(t, err)
				cfg.PolicySeqMeanTokenMean = true
				grad := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
				require.NoError(t, err)
				assert.Equal(t, one.KLLoss, res.KLLoss, "the KL term keeps Reduction")
				assert.Equal(t, one.EntropyBonus, res.EntropyBonus, "the entropy term keeps Reduction")
				if agg == ppo.SeqMeanTokenMean {
					assert.InDelta(t, one.Loss, res.Loss, 1e-15)
				} else {
					assert.NotEqual(t, one.PolicyLoss, res.PolicyLoss, "the option must change the policy term here")
				}
				// CISPO's weight is a stop-gradient: its differences move
				// old_logp with logp (as TestLossModeGradients does).
				fd := func(x []float64, k int) float64 {
					x0, o0 := x[k], in.OldLogp.Data[k]
					move := func(d float64) {
						x[k] = x0 + d
						if cfg.LossMode == ppo.CISPO && &x[0] == &in.Logp.Data[0] {
							in.OldLogp.Data[k] = o0 + d
						}
					}
					move(h)
					up := lossAt(t, in, cfg)
					move(-h)
					down := lossAt(t, in, cfg)
					x[k], in.OldLogp.Data[k] = x0, o0
					return (up - down) / (2 * h)
				}
				for p := range grad {
					if in.Mask.Data[p] == 0 {
						require.Zero(t, grad[p])
						require.Zero(t, in.EntropyGrad.Data[p])
						continue
					}
					assert.Truef(t, relClose(grad[p], fd(in.Logp.Data, p), 1e-5, 1e-8), "dlogp[%d,%d]: %.10g", p/8, p%8, grad[p])
					assert.Truef(t, relClose(in.EntropyGrad.Data[p], fd(in.Entropy.Data, p), 1e-6, 1e-9), "dentropy[%d,%d]", p/8, p%8)
				}
			})
		}
	}
}

// TestPolicySeqMeanTokenMeanMicroBatchesAddUp: with the global normalisers
// (SeqCount for the policy term and the seq-mean aggregations, TokenCount
// for token-mean) the micro-batches' losses and gradients add up to the
// whole batch's under every aggregation of the KL and entropy terms
// (KL-Cov, which picks its tokens per call, left out).
func TestPolicySeqMeanTokenMeanMicroBatchesAddUp(t *testing.T) {
	in := withEntropy(randomInputs(batchSpec{b: 7, t: 12, ref: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 93}), 5)
	cuts := []int{0, 2, 3, 7}
	for _, m := range policyAggModes {
		if m.name == "kl_cov" {
			continue // KL-Cov picks its tokens per call: not additive
		}
		for _, agg := range allAggregations {
			t.Run(fmt.Sprintf("%s/%v", m.name, agg), func(t *testing.T) {
				cfg := ppo.DefaultConfig()
				m.set(&cfg)
				cfg.Mode, cfg.KLCoef, cfg.KLEstimator, cfg.EntropyCoeff = agg, 0.02, ppo.K3Plus, 0.01
				cfg.PolicySeqMeanTokenMean = true
				whole := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(gradBatch(whole, in), in, cfg)
				require.NoError(t, err)
				cfg.TokenCount, cfg.SeqCount = float64(res.Tokens), float64(res.Sequences)
				var sum float64
				parts := make([]float64, in.Logp.Size())
				for i := 0; i+1 < len(cuts); i++ {
					lo, hi := cuts[i], cuts[i+1]
					part := sliceInputs(in, lo, hi)
					part.Entropy = rowsOf(in.Entropy, lo, hi)
					mr, err := ppo.PolicyLoss(gradBatch(parts[lo*in.Logp.T:hi*in.Logp.T], part), part, cfg)
					require.NoError(t, err)
					sum += mr.Loss
				}
				assert.True(t, relClose(sum, res.Loss, 1e-12, 1e-15), "micro-batches %.15g, whole %.15g", sum, res.Loss)
				for k := range whole {
					require.True(t, relClose(parts[k], whole[k], 1e-12, 1e-15), "grad[%d]: %.15g vs %.15g", k, parts[k], whole[k])
				}
			})
		}
	}
}

// TestPolicySeqMeanTokenMeanRejects: the option is not defined for the
// vanilla token-level surrogate or GeoMean, and SeqCount must still cover
// the batch's sequences.
func TestPolicySeqMeanTokenMeanRejects(t *testing.T) {
	for _, mode := range []ppo.LossMode{ppo.Vanilla, ppo.GeoMean} {
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.PolicySeqMeanTokenMean = mode, true
		err := cfg.Validate()
		require.ErrorIs(t, err, tensor.ErrRange, "%v", mode)
		assert.Contains(t, err.Error(), "PolicySeqMeanTokenMean")
	}
	in := randomInputs(batchSpec{b: 3, t: 4, spread: 0.2, seed: 7})
	cfg := ppo.DefaultConfig()
	cfg.LossMode, cfg.PolicySeqMeanTokenMean, cfg.SeqCount = ppo.SAPO, true, 2
	_, err := ppo.PolicyLoss(gradBatch(make([]float64, in.Logp.Size()), in), in, cfg)
	require.ErrorIs(t, err, tensor.ErrRange)
	assert.Contains(t, err.Error(), "SeqCount")
}

// TestVerlModePolicyAggregation: VerlMode gives gspo and sapo verl's
// seq-mean-token-mean policy term and leaves Reduction (verl's
// loss_agg_mode, for the KL and entropy terms) alone. SAPO by hand: one
// row, Δ = (0, 0), A = (1, 2), k1 KL against ref = logp − (0.2, 0.4),
// token-sum: the policy term is the token mean −(4/1)σ(0)·1.5 = −3 and the
// KL term the sum 0.6.
func TestVerlModePolicyAggregation(t *testing.T) {
	for _, m := range []ppo.LossMode{ppo.GSPO, ppo.GSPOToken, ppo.SAPO} {
		cfg := ppo.VerlMode(ppo.VerlDefaults(), m)
		assert.True(t, cfg.PolicySeqMeanTokenMean, "%v", m)
		assert.Equal(t, ppo.TokenMean, cfg.Mode, "%v", m)
	}
	assert.False(t, ppo.VerlMode(ppo.VerlDefaults(), ppo.CISPO).PolicySeqMeanTokenMean)
	mk := func(v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, len(v))
		copy(b.Data, v)
		return b
	}
	in := ppo.Inputs[float64]{Logp: mk(-1, -2), OldLogp: mk(-1, -2), Advantages: mk(1, 2), Mask: mk(1, 1), RefLogp: mk(-1.2, -2.4)}
	cfg := ppo.VerlMode(ppo.VerlDefaults(), ppo.SAPO)
	cfg.Mode, cfg.KLCoef, cfg.KLEstimator = ppo.TokenSum, 1, ppo.K1
	g := make([]float64, 2)
	res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	assert.InDelta(t, -3+0.6, res.Loss, 1e-15)
	// dSAPO/dlogp = −A·4σ(1−σ)·r = −A at r = 1, times ½ (token mean); the
	// KL term's 1 per token (token-sum).
	assert.InDeltaSlice(t, []float64{-0.5 + 1, -1 + 1}, g, 1e-15)
}

// TestPolicySeqMeanTokenMeanAllocatesNothing: the policy term's own
// weights live in the pooled job like the aggregation's.
func TestPolicySeqMeanTokenMeanAllocatesNothing(t *testing.T) {
	in := to32(randomInputs(batchSpec{b: 8, t: 64, ref: true, spread: 0.3, seed: 74}))
	grad := make([]float32, in.Logp.Size())
	for _, m := range []ppo.LossMode{ppo.GSPO, ppo.SAPO} {
		cfg := ppo.VerlMode(ppo.VerlDefaults(), m)
		cfg.KLCoef = 0.01
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "%v", m)
	}
}
