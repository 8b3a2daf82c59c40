package gae

import (
	"fmt"

	"github.com/rlpost/rlpost/klctl"
	"github.com/rlpost/rlpost/tensor"
)

// ApplyKLPenalty is KL-in-reward with a controlled coefficient, as verl's
// apply_kl_penalty (algorithm.use_kl_in_reward): it folds −β·kl into the
// rewards of the valid tokens with β = ctl.Value() (AddKLPenalty), measures
// the step's KL — the mean over the B rows of each row's mean kl over its
// valid tokens, a row without one counting 0 — and reports it to ctl with
// n = B responses (docs/spec.md#kl-coefficient-control). It returns that KL
// and the β it applied. On an invalid input neither rewards nor ctl
// changes. It allocates nothing.
func ApplyKLPenalty[F tensor.Float](rewards, kl, mask tensor.Batch[F], ctl *klctl.Controller) (meanKL, beta float64, err error) {
	if ctl == nil {
		return 0, 0, fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrRange, "ctl", nil, "nil controller"))
	}
	if err := rewards.Check("rewards"); err != nil {
		return 0, 0, fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckShape("kl", kl, rewards.Shape); err != nil {
		return 0, 0, fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckShape("mask", mask, rewards.Shape); err != nil {
		return 0, 0, fmt.Errorf("gae: %w", err)
	}
	// The step's KL first, so that nothing has changed if it cannot be
	// formed; AddKLPenalty then checks the mask and the values.
	var sum float64
	for b := range rewards.B {
		m, k := mask.Row(b), kl.Row(b)
		var rs float64
		n := 0
		for t, v := range m {
			if v == 1 {
				rs += float64(k[t])
				n++
			}
		}
		if n > 0 {
			sum += rs / float64(n)
		}
	}
	meanKL = sum / float64(rewards.B)
	beta = ctl.Value()
	if err := AddKLPenalty(rewards, kl, mask, beta); err != nil {
		return 0, 0, err
	}
	if _, err := ctl.Update(meanKL, rewards.B); err != nil {
		// kl is finite on valid tokens (AddKLPenalty checked), so only
		// the sum can have overflowed; the rewards are already penalised.
		return 0, 0, fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrRange, "kl", nil, "the mean KL overflows float64"))
	}
	return meanKL, beta, nil
}
