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

// TestKLInputClampByHand is the case: k3 of logp −200 against
// ref_logp −0.5 is e^{199.5} − 199.5 − 1 ≈ 2·10⁸⁶ unbounded; with the input
// bounded at 20 it is e^{20} − 21, with no gradient, and at 0.5 (not
// binding at x = 0.25) it is untouched.
func TestKLInputClampByHand(t *testing.T) {
	mk := func(v float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, 1)
		b.Data[0] = v
		return b
	}
	run := func(logp, ref, clamp float64) (float64, float64) {
		in := ppo.Inputs[float64]{Logp: mk(logp), OldLogp: mk(logp), Advantages: mk(0), Mask: mk(1), RefLogp: mk(ref)}
		cfg := ppo.DefaultConfig()
		cfg.KLCoef, cfg.KLInputClamp = 1, clamp
		g := make([]float64, 1)
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		return res.Loss, g[0]
	}
	loss, g := run(-200, -0.5, 0)
	assert.InEpsilon(t, math.Exp(199.5), loss, 1e-12)
	assert.Less(t, g, -1e86)
	loss, g = run(-200, -0.5, 20)
	assert.InEpsilon(t, math.Exp(20)-21, loss, 1e-15)
	assert.Equal(t, 0.0, g)
	loss, g = run(-1, -1.25, 0.5)
	assert.InDelta(t, math.Exp(-0.25)+0.25-1, loss, 1e-15)
	assert.InDelta(t, 1-math.Exp(-0.25), g, 1e-15)
	cfg := ppo.DefaultConfig()
	cfg.KLInputClamp = -1
	assert.ErrorIs(t, cfg.Validate(), tensor.ErrRange)
}

// TestKLInputClampGradients: by central differences, with references
// beyond the bound on some tokens.
func TestKLInputClampGradients(t *testing.T) {
	const h = 1e-6
	for _, est := range []ppo.KLEstimator{ppo.K3, ppo.LowVarKL} {
		t.Run(fmt.Sprint(est), func(t *testing.T) {
			in := randomInputs(batchSpec{b: 4, t: 7, ref: true, spread: 0.3, seed: 171})
			for i := range in.RefLogp.Data {
				if i%3 == 0 {
					in.RefLogp.Data[i] += 4 * float64(i%2*2-1)
				}
			}
			cfg := ppo.DefaultConfig()
			cfg.KLCoef, cfg.KLEstimator, cfg.KLInputClamp = 0.5, est, 2
			grad := make([]float64, in.Logp.Size())
			_, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
			require.NoError(t, err)
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
