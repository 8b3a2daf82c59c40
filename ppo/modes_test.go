package ppo_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

func TestParseLossMode(t *testing.T) {
	for _, name := range []string{"vanilla", "gspo", "gspo_token", "geo_mean", "cispo", "sapo", "gpg", "clip_cov", "kl_cov"} {
		m, err := ppo.ParseLossMode(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, m.String())
	}
	for _, bad := range []string{"", "GSPO", "ppo", "dapo", "gspo-token"} {
		_, err := ppo.ParseLossMode(bad)
		assert.Error(t, err, bad)
	}
}

// sequenceAdvantages gives every token of a row the row's first advantage
// (outcome rewards), where GSPO-token's gradient is GSPO's.
func sequenceAdvantages(in ppo.Inputs[float64]) {
	for b := range in.Advantages.B {
		row := in.Advantages.Row(b)
		for t := range row {
			row[t] = row[0]
		}
	}
}

// TestLossModeGradients checks each loss mode's gradient against central
// differences in float64, at each aggregation. CISPO's clipped weight is a
// constant (a stop-gradient): its differences move old_logp with logp, so
// the ratio, and with it the weight, stays put. GSPO-token's gradient is
// the derivative of GSPO's loss when a sequence's tokens share one
// advantage, and is checked there (the torch reference covers the rest).
func TestLossModeGradients(t *testing.T) {
	const h = 1e-6
	aggs := []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum}
	for i, mode := range []ppo.LossMode{ppo.GSPOToken, ppo.GeoMean, ppo.CISPO, ppo.SAPO, ppo.GPG, ppo.ClipCov, ppo.KLCov} {
		for k, agg := range aggs {
			t.Run(fmt.Sprintf("%v/%v", mode, agg), func(t *testing.T) {
				spec := batchSpec{b: 5, t: 9, ref: true, spread: 0.4, nonPrefix: true, emptyRow: true, seed: uint64(50 + 5*i + k)}
				if mode != ppo.GeoMean && mode != ppo.GSPOToken {
					spec.weights = true // (GSPO-token equals GSPO only for equal weights too)
				}
				in := randomInputs(spec)
				if mode == ppo.GSPOToken {
					sequenceAdvantages(in)
				}
				cfg := ppo.DefaultConfig()
				cfg.LossMode, cfg.Mode, cfg.KLCoef, cfg.KLEstimator = mode, agg, 0.05, ppo.K3
				cfg.ClipLow, cfg.ClipHigh, cfg.DualClip = 0.1, 0.15, 2
				if mode == ppo.GSPOToken {
					cfg.ClipLow, cfg.ClipHigh = 0.01, 0.01 // a sequence's mean log-ratio is small
				}
				if mode == ppo.SAPO {
					cfg.SAPOTauPos, cfg.SAPOTauNeg = 2, 3
				}
				cfg.ClipCovRatio, cfg.ClipCovLow, cfg.ClipCovHigh = 0.2, 0.02, 5
				cfg.KLCovRatio, cfg.KLCovCoef = 0.2, 0.5
				grad := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
				require.NoError(t, err)
				if mode == ppo.ClipCov || mode == ppo.KLCov {
					assert.NotZero(t, res.CovPickedFrac, "no token picked: the case does not exercise the selection")
				}
				if mode == ppo.CISPO || mode == ppo.GeoMean || mode == ppo.GSPOToken || mode == ppo.ClipCov {
					assert.NotZero(t, res.ClipFracHigh+res.ClipFracLow, "no clip active: the case does not exercise it")
				}
				for p := range grad {
					if in.Mask.Data[p] == 0 {
						require.Zero(t, grad[p])
						continue
					}
					q := clone(in)
					move := func(d float64) {
						q.Logp.Data[p] += d
						if mode == ppo.CISPO {
							q.OldLogp.Data[p] += d
						}
					}
					move(h)
					up := lossAt(t, q, cfg)
					move(-2 * h)
					fd := (up - lossAt(t, q, cfg)) / (2 * h)
					assert.Truef(t, relClose(grad[p], fd, 1e-5, 1e-8), "[%d,%d]: grad %.10g, finite difference %.10g",
						p/in.Logp.T, p%in.Logp.T, grad[p], fd)
				}
			})
		}
	}
}

// TestGSPOTokenIsGSPOWithSequenceAdvantages: same loss always; the same
// gradient when advantages are per sequence, a different one otherwise.
func TestGSPOTokenIsGSPOWithSequenceAdvantages(t *testing.T) {
	in := randomInputs(batchSpec{b: 4, t: 7, spread: 0.2, nonPrefix: true, seed: 71})
	run := func(m ppo.LossMode) (ppo.Result, []float64) {
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.Mode = m, ppo.SeqMeanTokenMean
		g := make([]float64, in.Logp.Size())
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		return res, g
	}
	r1, g1 := run(ppo.GSPO)
	r2, g2 := run(ppo.GSPOToken)
	assert.Equal(t, r1.Loss, r2.Loss)
	assert.NotEqual(t, g1, g2, "per-token advantages must make the gradients differ")
	sequenceAdvantages(in)
	_, g1 = run(ppo.GSPO)
	_, g2 = run(ppo.GSPOToken)
	for k := range g1 {
		assert.InDelta(t, g1[k], g2[k], 1e-15)
	}
}

func TestLossModeRejects(t *testing.T) {
	in := randomInputs(batchSpec{b: 2, t: 5, prox: true, weights: true, spread: 0.2, seed: 72})
	cfg := ppo.DefaultConfig()
	cfg.LossMode = ppo.GeoMean
	_, err := ppo.PolicyLoss(gradBatch(make([]float64, in.Logp.Size()), in), in, cfg)
	require.ErrorIs(t, err, tensor.ErrRange)
	assert.Contains(t, err.Error(), "prox_logp")
	for _, c := range []func(*ppo.Config){
		func(c *ppo.Config) { c.LossMode = ppo.VESPO + 1 },
		func(c *ppo.Config) { c.LossMode, c.DPPODeltaHigh = ppo.DPPOTV, -0.1 },
		func(c *ppo.Config) { c.LossMode, c.DPPODeltaLow = ppo.DPPOKL, math.Inf(1) },
		func(c *ppo.Config) { c.LossMode, c.ClipCovLow, c.ClipCovHigh = ppo.ClipCov, 5, 5 },
		func(c *ppo.Config) { c.LossMode, c.ClipCovLow, c.ClipCovHigh = ppo.ClipCov, 0, 0 },
		func(c *ppo.Config) { c.LossMode, c.KLCovRatio = ppo.KLCov, 1.5 },
		func(c *ppo.Config) { c.LossMode, c.KLCovCoef = ppo.KLCov, -1 },
		func(c *ppo.Config) { c.LossMode, c.RatioLevel = ppo.CISPO, ppo.SequenceRatio },
		func(c *ppo.Config) { c.LossMode, c.SAPOTauNeg = ppo.SAPO, -1 },
	} {
		cfg := ppo.DefaultConfig()
		c(&cfg)
		assert.ErrorIs(t, cfg.Validate(), tensor.ErrRange)
	}
}

// TestLossModesAllocateNothing: the mode rows reuse the job like the
// vanilla loss.
func TestLossModesAllocateNothing(t *testing.T) {
	in := to32(randomInputs(batchSpec{b: 8, t: 64, ref: true, spread: 0.3, seed: 73}))
	grad := make([]float32, in.Logp.Size())
	for _, m := range []ppo.LossMode{ppo.CISPO, ppo.GeoMean, ppo.GSPOToken} {
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.KLCoef = m, 0.01
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "%v", m)
	}
}

// TestCovSelectionByHand pins KL-Cov's choice on a row worked out by hand:
// A = (1, −1, 2, 0), logp = (−1, −2, −0.5, −3) have means 0.5 and −1.625
// and covariances (0.3125, 0.5625, 1.6875, 0.6875); a ratio of 0.5 picks
// ⌊4·0.5⌋ = 2 tokens, those of the two largest, t = 2 and t = 3.
func TestCovSelectionByHand(t *testing.T) {
	mk := func(v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, len(v))
		copy(b.Data, v)
		return b
	}
	lp := []float64{-1, -2, -0.5, -3}
	old := make([]float64, 4)
	for i := range lp {
		old[i] = lp[i] - 0.1
	}
	in := ppo.Inputs[float64]{Logp: mk(lp...), OldLogp: mk(old...), Advantages: mk(1, -1, 2, 0), Mask: mk(1, 1, 1, 1)}
	cfg := ppo.DefaultConfig()
	cfg.LossMode, cfg.KLCovRatio, cfg.KLCovCoef = ppo.KLCov, 0.5, 0.1
	grad := make([]float64, 4)
	res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
	require.NoError(t, err)
	r := math.Exp(0.1)
	assert.InDelta(t, (-2*r+2*0.1*0.1)/4, res.Loss, 1e-15)
	assert.Equal(t, 0.5, res.CovPickedFrac)
	want := []float64{-r / 4, r / 4, (-2*r + 0.1) / 4, 0.1 / 4}
	for i := range want {
		assert.InDelta(t, want[i], grad[i], 1e-15, "t=%d", i)
	}

	// Ties go to the lower index: equal covariances, one pick.
	in.Advantages, in.Logp = mk(1, -1, 1, -1), mk(-1, -2, -1, -2)
	for i := range old {
		in.OldLogp.Data[i] = in.Logp.Data[i] - 0.1
	}
	cfg.KLCovRatio = 0.25
	_, err = ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
	require.NoError(t, err)
	assert.InDelta(t, (-r+0.1)/4, grad[0], 1e-15, "the first of the tied tokens is picked")
	assert.InDelta(t, -r/4, grad[2], 1e-15)
}

// TestClipCovSeed: one seed always picks the same tokens; the choice is
// among the eligible tokens, and the seed changes it.
func TestClipCovSeed(t *testing.T) {
	in := randomInputs(batchSpec{b: 6, t: 40, spread: 0.1, seed: 81})
	cfg := ppo.DefaultConfig()
	cfg.LossMode, cfg.ClipCovRatio, cfg.ClipCovLow, cfg.ClipCovHigh = ppo.ClipCov, 0.05, 0.01, 5
	run := func(seed uint64) ([]float64, ppo.Result) {
		c := cfg
		c.ClipCovSeed = seed
		g := make([]float64, in.Logp.Size())
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, c)
		require.NoError(t, err)
		return g, res
	}
	g1, r1 := run(1)
	g1again, _ := run(1)
	g2, r2 := run(2)
	assert.Equal(t, g1, g1again)
	assert.NotEqual(t, g1, g2)
	assert.Equal(t, r1.CovPickedFrac, r2.CovPickedFrac)
	assert.InDelta(t, float64(int(float64(r1.Tokens)*0.05))/float64(r1.Tokens), r1.CovPickedFrac, 1e-15)
}

// TestLossModesMicroBatchesAddUp extends TestMicroBatchesAddUp to the loss
// modes whose loss is a sum over rows (all but Clip-Cov and KL-Cov, which
// select tokens per call): with the whole batch's token and sequence
// counts, the micro-batch losses and gradients add up to the batch's.
func TestLossModesMicroBatchesAddUp(t *testing.T) {
	in := randomInputs(batchSpec{b: 7, t: 12, ref: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 91})
	cuts := []int{0, 2, 3, 7}
	for _, mode := range []ppo.LossMode{ppo.GSPOToken, ppo.GeoMean, ppo.CISPO, ppo.SAPO, ppo.GPG} {
		for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum} {
			t.Run(fmt.Sprintf("%v/%v", mode, agg), func(t *testing.T) {
				cfg := ppo.DefaultConfig()
				cfg.LossMode, cfg.Mode, cfg.KLCoef, cfg.KLEstimator = mode, agg, 0.02, ppo.K3Plus
				whole := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(gradBatch(whole, in), in, cfg)
				require.NoError(t, err)
				cfg.TokenCount, cfg.SeqCount = float64(res.Tokens), float64(res.Sequences)
				var sum float64
				parts := make([]float64, in.Logp.Size())
				for i := 0; i+1 < len(cuts); i++ {
					lo, hi := cuts[i], cuts[i+1]
					mr, err := ppo.PolicyLoss(gradBatch(parts[lo*in.Logp.T:hi*in.Logp.T], sliceInputs(in, lo, hi)), sliceInputs(in, lo, hi), cfg)
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
