package bench

import (
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
)

func init() {
	Register("group_advantages", "cpu", groupAdvantages)
	Register("group_advantages_reinforce_plus_plus_baseline", "cpu", estimatorBench(grpo.ReinforcePlusPlusBaseline))
	Register("group_advantages_grpo_passk", "cpu", estimatorBench(grpo.PassK))
}

// GroupSize is the group size of `rlpost bench -op group_advantages`.
const GroupSize = 16

// groupAdvantages measures GRPO advantages (unbiased std) of B·T rewards in
// contiguous groups of 16.
func groupAdvantages(d *benchdata.Batch) (Iteration, Iteration, error) {
	rewards := d.Rewards.Data
	adv := make([]float32, len(rewards))
	cfg := grpo.DefaultConfig()
	groups := grpo.Contiguous(GroupSize)
	return func() error {
		_, err := grpo.Advantages(adv, rewards, groups, cfg)
		return err
	}, nil, nil
}

// estimatorBench measures one of grpo.AdvantagesWith's estimators on the
// same rewards and groups as group_advantages, with every reward scored
// through an explicit mask (the mask's cost included).
func estimatorBench(e grpo.Estimator) Setup {
	return func(d *benchdata.Batch) (Iteration, Iteration, error) {
		rewards := d.Rewards.Data
		adv := make([]float32, len(rewards))
		scored := make([]bool, len(rewards))
		for i := range scored {
			scored[i] = true
		}
		cfg := grpo.Config{Estimator: e, Eps: 1e-6}
		groups := grpo.Contiguous(GroupSize)
		in := grpo.Inputs[float32]{Scored: scored}
		return func() error {
			_, err := grpo.AdvantagesWith(adv, rewards, groups, cfg, in)
			return err
		}, nil, nil
	}
}
