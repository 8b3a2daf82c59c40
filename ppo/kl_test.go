package ppo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
)

func TestParseKLEstimatorVerlNames(t *testing.T) {
	for name, want := range map[string]ppo.KLEstimator{
		"k1": ppo.K1, "kl": ppo.K1, "k2": ppo.K2, "mse": ppo.K2, "k3": ppo.K3,
		"low_var_kl": ppo.LowVarKL, "abs": ppo.KLAbs, "k3+": ppo.K3Plus,
	} {
		got, err := ppo.ParseKLEstimator(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
		if name != "kl" && name != "mse" {
			assert.Equal(t, name, got.String(), "String is the inverse of Parse")
		}
	}
	for _, bad := range []string{"", "k4", "K3", "low-var-kl", "k2+", "full"} {
		_, err := ppo.ParseKLEstimator(bad)
		assert.Error(t, err, bad)
	}
	cfg := ppo.DefaultConfig()
	cfg.KLEstimator = ppo.K3Plus + 1
	assert.Error(t, cfg.Validate())
}

// TestKLEstimatorGradients checks the gradient of each of verl's KL
// estimators against central differences, at both ratio levels, with
// low_var_kl's clamp both idle and (tightened by KLClamp) binding. k3+ is
// by definition not the derivative of its value: its gradient is k2's, so
// it is checked against the differences of the loss with k2.
func TestKLEstimatorGradients(t *testing.T) {
	const h = 1e-6
	type kcase struct {
		est   ppo.KLEstimator
		clamp float64
		fd    ppo.KLEstimator // whose value the finite differences take
	}
	for _, kc := range []kcase{
		{ppo.LowVarKL, 0, ppo.LowVarKL}, {ppo.LowVarKL, 0.05, ppo.LowVarKL},
		{ppo.KLAbs, 0, ppo.KLAbs}, {ppo.K3Plus, 0, ppo.K2}, {ppo.K3Plus, 0.05, ppo.K2},
	} {
		for _, level := range []ppo.RatioLevel{ppo.TokenRatio, ppo.SequenceRatio} {
			t.Run(fmt.Sprintf("%v/clamp=%v/%v", kc.est, kc.clamp, level), func(t *testing.T) {
				in := randomInputs(batchSpec{b: 4, t: 9, ref: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 31})
				cfg := ppo.DefaultConfig()
				cfg.RatioLevel, cfg.KLCoef, cfg.KLEstimator, cfg.KLClamp = level, 0.3, kc.est, kc.clamp
				cfg.Mode = ppo.SeqMeanTokenMean
				grad := make([]float64, in.Logp.Size())
				_, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
				require.NoError(t, err)
				fdCfg := cfg
				fdCfg.KLEstimator, fdCfg.KLClamp = kc.fd, 0
				if kc.fd == kc.est {
					fdCfg.KLClamp = kc.clamp
				}
				for k := range grad {
					if in.Mask.Data[k] == 0 {
						require.Zero(t, grad[k])
						continue
					}
					p := clone(in)
					p.Logp.Data[k] += h
					up := lossAt(t, p, fdCfg)
					p.Logp.Data[k] -= 2 * h
					fd := (up - lossAt(t, p, fdCfg)) / (2 * h)
					assert.Truef(t, relClose(grad[k], fd, 1e-5, 1e-8), "[%d,%d]: grad %.10g, finite difference %.10g",
						k/in.Logp.T, k%in.Logp.T, grad[k], fd)
				}
			})
		}
	}
}

// TestK3PlusValueIsK3 checks that k3+ changes the gradient only: its loss
// and KL statistic are k3's.
func TestK3PlusValueIsK3(t *testing.T) {
	in := randomInputs(batchSpec{b: 3, t: 8, ref: true, spread: 0.3, seed: 32})
	cfg := ppo.DefaultConfig()
	cfg.KLCoef, cfg.KLClamp = 0.2, 0.1
	run := func(est ppo.KLEstimator) ppo.Result {
		c := cfg
		c.KLEstimator = est
		res, err := ppo.PolicyLoss(gradBatch(make([]float64, in.Logp.Size()), in), in, c)
		require.NoError(t, err)
		return res
	}
	k3, plus := run(ppo.K3), run(ppo.K3Plus)
	assert.Equal(t, k3.Loss, plus.Loss)
	assert.Equal(t, k3.KL, plus.KL)
	low := run(ppo.LowVarKL) // KLClamp 0.1 replaces low_var_kl's 10
	assert.Equal(t, k3.Loss, low.Loss)
}
