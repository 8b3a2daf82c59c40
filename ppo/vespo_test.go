package ppo_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// TestVESPOByHand: one token. On-policy (w = 1) the gamma weight is
// φ(1) = e^λ·e^{−λ} = 1, so the loss is GPG's −A·logp. With logp − old =
// ln 2 (w = 2) and A = 1, φ = e^{3 + 2·ln 2 − 6} = 4e^{−3} (k = 2, λ = 3);
// with A = −1, φ = e^{2 + 3·ln 2 − 4} = 8e^{−2} (k = 3, λ = 2). φ is a
// constant: the gradient is −φ·A.
func TestVESPOByHand(t *testing.T) {
	mk := func(v float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, 1)
		b.Data[0] = v
		return b
	}
	for _, c := range []struct {
		old, a, phi float64
	}{{-1, 1, 1}, {-1 - math.Ln2, 1, 4 * math.Exp(-3)}, {-1 - math.Ln2, -1, 8 * math.Exp(-2)}} {
		in := ppo.Inputs[float64]{Logp: mk(-1), OldLogp: mk(c.old), Advantages: mk(c.a), Mask: mk(1)}
		cfg := ppo.DefaultConfig()
		cfg.LossMode = ppo.VESPO
		g := make([]float64, 1)
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		assert.InDelta(t, -c.phi*c.a*-1, res.Loss, 1e-14)
		assert.InDelta(t, -c.phi*c.a, g[0], 1e-14)
	}
	for _, set := range []func(*ppo.Config){
		func(c *ppo.Config) { c.VESPOKPos = -1 },
		func(c *ppo.Config) { c.VESPOLambdaNeg = math.Inf(1) },
		func(c *ppo.Config) { c.LossMode, c.RolloutIS = ppo.VESPO, ppo.RolloutToken },
		func(c *ppo.Config) { c.LossMode, c.RatioLevel = ppo.VESPO, ppo.SequenceRatio },
	} {
		cfg := ppo.DefaultConfig()
		set(&cfg)
		assert.ErrorIs(t, cfg.Validate(), tensor.ErrRange)
	}
}

// TestVESPOGradientIsFrozenWeight: VESPO's gradient is the derivative of
// −φ·A·logp with φ held at its value: central differences of that frozen
// loss, whose φ comes from a run with the same sequence log-ratios.
func TestVESPOGradientIsFrozenWeight(t *testing.T) {
	in := randomInputs(batchSpec{b: 5, t: 7, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 181})
	cfg := ppo.DefaultConfig()
	cfg.LossMode, cfg.Mode = ppo.VESPO, ppo.SeqMeanTokenMean
	grad := make([]float64, in.Logp.Size())
	_, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
	require.NoError(t, err)
	// Moving logp and old_logp together keeps every w, so the loss is
	// linear in the shift with slope Σ grad.
	const h = 1e-4
	for b := range in.Logp.B {
		q := clone(in)
		for t := range in.Logp.T {
			q.Logp.Data[b*in.Logp.T+t] += h
			q.OldLogp.Data[b*in.Logp.T+t] += h
		}
		slope := (lossAt(t, q, cfg) - lossAt(t, in, cfg)) / h
		sum := 0.0
		for t := range in.Logp.T {
			sum += grad[b*in.Logp.T+t]
		}
		assert.InDelta(t, sum, slope, 1e-8, "row %d", b)
	}
}
