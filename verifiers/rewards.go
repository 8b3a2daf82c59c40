package verifiers

import (
	"fmt"

	"github.com/rlpost/rlpost/tensor"
)

// Rewards writes each result's Score into rewards, in the estimators'
// precision F, and whether it is a verdict into scored: false for a
// Timeout, which judged nothing and must not enter a group's mean as a 0.
// scored is grpo.Inputs.Scored as it stands; rewards and scored have the
// length of results (scored may be nil when the caller has no use for it,
// in which case a Timeout is an error rather than a silent 0). An unscored
// entry's reward is 0.
func Rewards[F tensor.Float](rewards []F, scored []bool, results []Result) error {
	if len(rewards) != len(results) {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrShape, "rewards", nil, "length %d, want %d (results)", len(rewards), len(results)))
	}
	if scored != nil && len(scored) != len(results) {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrShape, "scored", nil, "length %d, want %d (results)", len(scored), len(results)))
	}
	for i, r := range results {
		if r.Timeout && scored == nil {
			return fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrRange, "results", tensor.At(i),
				"a timeout (%s), not a verdict; pass scored to mark it unscored", r.Reason))
		}
		if !tensor.IsFinite(r.Score) {
			return fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrNonFinite, "results", tensor.At(i), "score %v", r.Score))
		}
	}
	for i, r := range results {
		rewards[i] = F(r.Score)
		if scored != nil {
			scored[i] = !r.Timeout
			if r.Timeout {
				rewards[i] = 0
			}
		}
	}
	return nil
}
