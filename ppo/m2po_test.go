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

// TestM2POByHand: m2 = (old − prox)² = (1, 0.25, 0.01). The means of the
// tokens left after dropping the largest 0, 1, 2 are 0.42, 0.13, 0.01:
// τ = 0.2 drops the first token, τ = 0.005 is never reached and drops all
// but the last, τ = 1 drops none. logp = prox and A = 1, so each kept token
// adds −w, w = e^{prox − old}, over the kept count (token-mean).
func TestM2POByHand(t *testing.T) {
	mk := func(v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, len(v))
		copy(b.Data, v)
		return b
	}
	prox := []float64{-1, -0.5, -0.1}
	in := ppo.Inputs[float64]{Logp: mk(prox...), OldLogp: mk(0, 0, 0), ProxLogp: mk(prox...), Advantages: mk(1, 1, 1), Mask: mk(1, 1, 1)}
	w := func(i int) float64 { return math.Exp(prox[i]) }
	for _, c := range []struct {
		tau  float64
		loss float64
		kept int
	}{
		{0.2, -(w(1) + w(2)) / 2, 2},
		{0.005, -w(2), 1},
		{1, -(w(0) + w(1) + w(2)) / 3, 3},
	} {
		cfg := ppo.DefaultConfig()
		cfg.M2POThreshold = c.tau
		g := make([]float64, 3)
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		assert.InDelta(t, c.loss, res.Loss, 1e-15, "τ = %v", c.tau)
		assert.Equal(t, c.kept, res.Tokens, "τ = %v", c.tau)
		assert.InDelta(t, float64(3-c.kept)/3, res.Rollout.M2POMaskedFrac, 1e-15)
	}
	cfg := ppo.DefaultConfig()
	cfg.M2POThreshold = 0.2
	in.ProxLogp = tensor.Batch[float64]{}
	_, err := ppo.PolicyLoss(gradBatch(make([]float64, 3), in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrShape)
	cfg.M2POThreshold = -1
	assert.ErrorIs(t, cfg.Validate(), tensor.ErrRange)
}

// TestM2POGradients: the mask is a constant of logp (it reads old and prox
// only), so the gradient is the masked loss's, by central differences.
func TestM2POGradients(t *testing.T) {
	const h = 1e-6
	for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.TokenSum} {
		t.Run(fmt.Sprint(agg), func(t *testing.T) {
			in := randomInputs(batchSpec{b: 6, t: 9, ref: true, prox: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 151})
			cfg := ppo.DefaultConfig()
			cfg.Mode, cfg.KLCoef, cfg.M2POThreshold = agg, 0.1, 0.02
			grad := make([]float64, in.Logp.Size())
			res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
			require.NoError(t, err)
			assert.Greater(t, res.Rollout.M2POMaskedFrac, 0.0)
			assert.Less(t, res.Rollout.M2POMaskedFrac, 1.0)
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

func TestM2POAllocatesNothing(t *testing.T) {
	in := to32(randomInputs(batchSpec{b: 8, t: 61, prox: true, spread: 0.3, seed: 152}))
	cfg := ppo.DefaultConfig()
	cfg.M2POThreshold = 0.01
	grad := make([]float32, in.Logp.Size())
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
