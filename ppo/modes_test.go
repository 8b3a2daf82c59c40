package ppo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

func TestParseLossMode(t *testing.T) {
	for _, name := range []string{"vanilla", "gspo", "gspo_token", "geo_mean", "cispo", "sapo", "gpg"} {
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
	for i, mode := range []ppo.LossMode{ppo.GSPOToken, ppo.GeoMean, ppo.CISPO, ppo.SAPO, ppo.GPG} {
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
				grad := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(grad, in, cfg)
				require.NoError(t, err)
				if mode == ppo.CISPO || mode == ppo.GeoMean || mode == ppo.GSPOToken {
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
		res, err := ppo.PolicyLoss(g, in, cfg)
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
	_, err := ppo.PolicyLoss(make([]float64, in.Logp.Size()), in, cfg)
	require.ErrorIs(t, err, tensor.ErrRange)
	assert.Contains(t, err.Error(), "prox_logp")
	for _, c := range []func(*ppo.Config){
		func(c *ppo.Config) { c.LossMode = ppo.GPG + 1 },
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
			if _, err := ppo.PolicyLoss(grad, in, cfg); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "%v", m)
	}
}
