package bench

import (
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/benchdata"
)

func init() {
	Register("group_advantages", "cpu", groupAdvantages)
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
