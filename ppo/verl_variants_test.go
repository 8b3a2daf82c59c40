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

// TestVerlVariantGradients checks the gradients of verl's variants of two
// papers' formulas against central differences in float64:
// Config.GeoMeanAllRows (GMPO's policy term the mean over all rows, an
// empty one included, beside KL and entropy terms under each aggregation;
// dLoss/dentropy too) and Config.ClipCovMeanEps (one advantage for the
// whole batch, so that every covariance is 0 without it and Clip-Cov picks
// nothing, while with it the tokens above the mean log-probability pass
// ClipCovLow = 0).
func TestVerlVariantGradients(t *testing.T) {
	const h = 1e-6
	aggs := []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum}
	for k, agg := range aggs {
		for _, mode := range []ppo.LossMode{ppo.GeoMean, ppo.ClipCov} {
			t.Run(fmt.Sprintf("%v/%v", mode, agg), func(t *testing.T) {
				in := withEntropy(randomInputs(batchSpec{b: 5, t: 8, ref: true, spread: 0.4, nonPrefix: true, seed: uint64(200 + k)}), uint64(k))
				in.EntropyGrad = tensor.MustNew[float64](5, 8)
				clear(in.Mask.Row(2)) // a row without a valid token
				cfg := ppo.DefaultConfig()
				cfg.LossMode, cfg.Mode, cfg.KLCoef, cfg.EntropyCoeff = mode, agg, 0.05, 0.01
				cfg.ClipLow, cfg.ClipHigh = 0.1, 0.15
				if mode == ppo.ClipCov {
					for i := range in.Advantages.Data {
						in.Advantages.Data[i] = 1 // sums exactly: the exact covariances are all 0
					}
					cfg.ClipCovRatio, cfg.ClipCovLow, cfg.ClipCovHigh = 0.3, 0, 5
				}
				paper, err := ppo.PolicyLoss(like(make([]float64, in.Logp.Size()), in.Logp), in, cfg)
				require.NoError(t, err)
				cfg.GeoMeanAllRows, cfg.ClipCovMeanEps = true, ppo.VerlClipCovMeanEps
				grad := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
				require.NoError(t, err)
				assert.NotEqual(t, paper.Loss, res.Loss, "the option must change the loss here")
				if mode == ppo.ClipCov {
					assert.Zero(t, paper.CovPickedFrac, "exact means: every covariance is 0")
					assert.NotZero(t, res.CovPickedFrac)
				} else {
					assert.NotZero(t, res.ClipFracHigh+res.ClipFracLow, "no clip active: the case does not exercise it")
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

// TestVerlVariantsByHand pins the verl preset's two variants on values
// worked by hand; verl's compute_policy_loss_geo_mean, kl_penalty, agg_loss
// and compute_policy_loss_clip_cov (b178a3c) give the same numbers (geo_mean
// to 10⁻⁸, the effect of the 10⁻⁸ verl adds to its denominators).
func TestVerlVariantsByHand(t *testing.T) {
	mk := func(B int, v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](B, len(v)/B)
		copy(b.Data, v)
		return b
	}
	// geo_mean, row 0: Δ = (0.3, −0.1), A = (1, 3); row 1 empty. Δ' = (0.2,
	// −0.1) (A > 0 clips from above at 0.2), R = e^{0.05}, Ā = 2; verl's
	// torch.mean over both rows: −2R/2 = −R. The k1 KL term x = (0.2, 0.4)
	// stays token-mean (verl's loss_agg_mode): ½·0.3 = 0.15. Token 0 is
	// clipped: only its KL gradient ½·½; token 1: −Ā·R/(B·|y|) + ¼.
	in := ppo.Inputs[float64]{Logp: mk(2, 0.3, -0.1, 0, 0), OldLogp: mk(2, 0, 0, 0, 0), Advantages: mk(2, 1, 3, 1, 0),
		Mask: mk(2, 1, 1, 0, 0), RefLogp: mk(2, 0.1, -0.5, 0, 0)}
	cfg := ppo.VerlMode(ppo.VerlDefaults(), ppo.GeoMean)
	require.True(t, cfg.GeoMeanAllRows)
	require.Equal(t, ppo.TokenMean, cfg.Mode, "verl's KL and entropy terms keep loss_agg_mode")
	cfg.KLCoef, cfg.KLEstimator = 0.5, ppo.K1
	g := make([]float64, 4)
	res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	R := math.Exp(0.05)
	assert.InDelta(t, -R+0.15, res.Loss, 1e-15)
	assert.InDeltaSlice(t, []float64{0.25, -R/2 + 0.25, 0, 0}, g, 1e-15)
	// The paper's (the option off): token-mean of the sequence loss carried
	// by each of the row's two tokens, −2R.
	cfg.GeoMeanAllRows = false
	res, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	assert.InDelta(t, -2*R+0.15, res.Loss, 1e-15)

	// Clip-Cov, A = (1, 1), logp = old = (−1, −2): the exact covariances
	// are 0 and no token passes clip_cov_lb = 0, so the loss is −A·r
	// token-mean, −1. verl's means divide by 2 + 10⁻⁸: A − μ_A ≈ 5·10⁻⁹ and
	// logp − μ_logp ≈ ±½, so token 0's covariance is about +2.5·10⁻⁹ and
	// verl detaches it: loss −½, gradient (0, −½).
	in = ppo.Inputs[float64]{Logp: mk(1, -1, -2), OldLogp: mk(1, -1, -2), Advantages: mk(1, 1, 1), Mask: mk(1, 1, 1)}
	cfg = ppo.VerlMode(ppo.VerlDefaults(), ppo.ClipCov)
	require.Equal(t, ppo.VerlClipCovMeanEps, cfg.ClipCovMeanEps)
	cfg.ClipCovRatio, cfg.ClipCovLow, cfg.ClipCovHigh = 1, 0, 5
	g = make([]float64, 2)
	res, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	assert.Equal(t, -0.5, res.Loss)
	assert.Equal(t, []float64{0, -0.5}, g)
	assert.Equal(t, 0.5, res.CovPickedFrac)
	cfg.ClipCovMeanEps = 0
	res, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	assert.Equal(t, -1.0, res.Loss)
	assert.Equal(t, []float64{-0.5, -0.5}, g)
}

// TestVerlVariantsRejects: ClipCovMeanEps is a finite number ≥ 0.
func TestVerlVariantsRejects(t *testing.T) {
	for _, eps := range []float64{-1e-8, math.Inf(1), math.NaN()} {
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.ClipCovMeanEps = ppo.ClipCov, eps
		err := cfg.Validate()
		require.ErrorIs(t, err, tensor.ErrRange, "%v", eps)
		assert.Contains(t, err.Error(), "ClipCovMeanEps")
	}
}
