package bench

import (
	"github.com/rlpost/rlpost/internal/benchdata"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	Register("policy_loss", "cpu", policyLoss)
}

// PolicyLossConfig is the configuration `rlpost bench -op policy_loss`
// measures: token-mean, clip 0.2/0.28, dual clip 3, k3 KL to a reference
// with coefficient 0.001.
func PolicyLossConfig() ppo.Config {
	cfg := ppo.DefaultConfig()
	cfg.ClipLow, cfg.ClipHigh, cfg.DualClip = 0.2, 0.28, 3
	cfg.KLCoef, cfg.KLEstimator = 0.001, ppo.K3
	return cfg
}

func policyLoss(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := PolicyLossConfig()
	in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp}
	grad := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	return func() error {
		_, err := ppo.PolicyLoss(grad, in, cfg)
		return err
	}, nil, nil
}
