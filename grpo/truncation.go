package grpo

import (
	"fmt"

	"github.com/rlpost/rlpost/tensor"
)

// MaskTruncated is DAPO's overlong filtering (DAPO: An Open-Source LLM
// Reinforcement Learning System at Scale, arXiv 2503.14476, §3.4, Overlong
// Filtering: the loss of truncated samples is masked): it sets
// every token of row b of the loss mask to 0 where truncated[b], the
// responses the inference engine cut at the length limit (finish reason
// "length", not a stop token). It returns how many rows it masked. On
// error mask is unchanged; it allocates nothing. mask may be packed
// (tensor.Packed).
//
// The mask only removes the responses from the loss. To keep their
// arbitrary rewards out of the group baselines too, mark them unscored:
// Inputs.Scored[i] = !truncated[i] (docs/spec.md#group-advantages).
func MaskTruncated[F tensor.Float](mask tensor.Batch[F], truncated []bool) (int, error) {
	if err := mask.CheckLayout("mask"); err != nil {
		return 0, fmt.Errorf("grpo: %w", err)
	}
	if len(truncated) != mask.B {
		return 0, fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrShape, "truncated", nil, "length %d, want B = %d", len(truncated), mask.B))
	}
	n := 0
	for b, cut := range truncated {
		if cut {
			clear(mask.Row(b))
			n++
		}
	}
	return n, nil
}
