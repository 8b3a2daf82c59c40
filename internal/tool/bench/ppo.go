package bench

import (
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	Register("policy_loss", "cpu", policyLoss)
	Register("policy_loss_rollout", "cpu", policyLossRollout)
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

// PolicyLossRolloutConfig is the configuration `rlpost bench -op
// policy_loss_rollout` measures: PolicyLossConfig with verl's rollout
// correction, token-level importance weights truncated at 2 and
// geometric-mean rejection outside [1/2, 2].
func PolicyLossRolloutConfig() ppo.Config {
	cfg := PolicyLossConfig()
	cfg.RolloutIS, cfg.RolloutISThreshold = ppo.RolloutToken, 2
	cfg.RolloutRS, cfg.RolloutRSThreshold = ppo.RolloutGeometric, 2
	return cfg
}

// policyLossRollout is policy_loss with rollout log-probs: old_logp moved
// by a deterministic ±0.05 per token, and 2 nats down on every 64th token,
// so that some weights truncate.
func policyLossRollout(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := PolicyLossRolloutConfig()
	roll := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	for i, v := range d.OldLogp.Data {
		roll.Data[i] = v + 0.05*float32(i%3-1)
		if i%64 == 0 {
			roll.Data[i] -= 2
		}
	}
	in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp,
		RolloutLogp: roll}
	grad := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	return func() error {
		_, err := ppo.PolicyLoss(grad, in, cfg)
		return err
	}, nil, nil
}
