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

// TestDPPOByHand: one token, π_θ = 0.6, π_old = 0.3, so r = 2. With A = 1
// the TV rule masks it (0.6 − 0.3 > 0.2); with A = −1 it keeps it (loss
// −A·r = 2, gradient 2). The binary KL, 0.3·ln(0.3/0.6) + 0.7·ln(0.7/0.4)
// ≈ 0.1838, masks it at δ = 0.05 and keeps it at 0.2.
func TestDPPOByHand(t *testing.T) {
	mk := func(v float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, 1)
		b.Data[0] = v
		return b
	}
	run := func(mode ppo.LossMode, a, delta float64) (float64, float64, ppo.Result) {
		in := ppo.Inputs[float64]{Logp: mk(math.Log(0.6)), OldLogp: mk(math.Log(0.3)), Advantages: mk(a), Mask: mk(1)}
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.DPPODeltaHigh = mode, delta
		g := make([]float64, 1)
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		return res.Loss, g[0], res
	}
	loss, g, res := run(ppo.DPPOTV, 1, 0)
	assert.Equal(t, 0.0, loss)
	assert.Equal(t, 0.0, g)
	assert.Equal(t, 1.0, res.ClipFracHigh)
	loss, g, _ = run(ppo.DPPOTV, -1, 0)
	assert.InDelta(t, 2, loss, 1e-12)
	assert.InDelta(t, 2, g, 1e-12)
	d := 0.3*math.Log(0.5) + 0.7*math.Log(0.7/0.4)
	assert.InDelta(t, 0.1838, d, 1e-4)
	loss, _, _ = run(ppo.DPPOKL, 1, 0)
	assert.Equal(t, 0.0, loss)
	loss, g, _ = run(ppo.DPPOKL, 1, 0.2)
	assert.InDelta(t, -2, loss, 1e-12)
	assert.InDelta(t, -2, g, 1e-12)
	// Vanilla PPO clips the same token at 1.2: −1.2, no gradient.
	loss, g, _ = run(ppo.Vanilla, 1, 0)
	assert.InDelta(t, -1.2, loss, 1e-12)
	assert.Equal(t, 0.0, g)
}

// TestDPPOGradients: the mask is a constant of logp, so the gradient is the
// derivative of −r·A·mask, checked by central differences where no token
// sits on a mask boundary (none does at these draws); each case masks some
// tokens and keeps others.
func TestDPPOGradients(t *testing.T) {
	const h = 1e-6
	for _, mode := range []ppo.LossMode{ppo.DPPOTV, ppo.DPPOKL} {
		for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.TokenSum} {
			t.Run(fmt.Sprintf("%v/%v", mode, agg), func(t *testing.T) {
				in := randomInputs(batchSpec{b: 6, t: 9, ref: true, weights: true, spread: 0.5, nonPrefix: true, emptyRow: true, seed: 141})
				for i := range in.Logp.Data { // probabilities that move
					in.Logp.Data[i] = -0.05 - 1.5*math.Abs(math.Sin(float64(i)))
					in.OldLogp.Data[i] = min(-0.01, in.Logp.Data[i]+0.6*math.Sin(float64(3*i)))
				}
				cfg := ppo.DefaultConfig()
				cfg.LossMode, cfg.Mode, cfg.KLCoef = mode, agg, 0.1
				grad := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
				require.NoError(t, err)
				masked := res.ClipFracHigh + res.ClipFracLow
				assert.Greater(t, masked, 0.0)
				assert.Less(t, masked, 1.0)
				for k := range grad {
					q := clone(in)
					q.Logp.Data[k] += h
					up := lossAt(t, q, cfg)
					q.Logp.Data[k] -= 2 * h
					fd := (up - lossAt(t, q, cfg)) / (2 * h)
					assert.Truef(t, relClose(grad[k], fd, 1e-5, 1e-8), "[%d]: grad %.10g, fd %.10g", k, grad[k], fd)
				}
			})
		}
	}
}
