package rewards

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// ErrVerdict is wrapped by ParseVerdict's errors: a judge reply without a
// YES or NO verdict.
var ErrVerdict = errors.New("no YES/NO verdict")

// ParseVerdict reads the verdict of a VAGEN judge ("VAGEN", Appendix
// D.1.1: every judge prompt ends "Your answer should be in the format of
// <think>...</think><answer>YES</answer> or
// <think>...</think><answer>NO</answer>"). The verdict is the content of
// the reply's last <answer>…</answer> block or, when the reply has no such
// block, the whole reply; after trimming white space and the decoration
// judges add around a word (. ! " ' * `), it must be YES or NO in any case.
// yes reports which. Anything else, an empty reply included, is an error
// wrapping ErrVerdict; a reply over verifiers.MaxInputBytes one wrapping
// verifiers.ErrTooLarge. It runs in time linear in len(reply).
func ParseVerdict(reply string) (yes bool, err error) {
	if len(reply) > verifiers.MaxInputBytes {
		return false, fmt.Errorf("rewards: %w", tensor.Errorf(verifiers.ErrTooLarge, "reply", nil, "%d bytes, limit %d", len(reply), verifiers.MaxInputBytes))
	}
	v := reply
	if i := strings.LastIndex(reply, "<answer>"); i >= 0 {
		rest := reply[i+len("<answer>"):]
		j := strings.Index(rest, "</answer>")
		if j < 0 {
			return false, fmt.Errorf("rewards: %w: the last <answer> is not closed", ErrVerdict)
		}
		v = rest[:j]
	}
	v = strings.Trim(strings.TrimSpace(v), ".!\"'*` \t\r\n")
	switch {
	case strings.EqualFold(v, "yes"):
		return true, nil
	case strings.EqualFold(v, "no"):
		return false, nil
	}
	if len(v) > 32 {
		v = v[:32] + "…"
	}
	return false, fmt.Errorf("rewards: %w: %q", ErrVerdict, v)
}

// VerdictJudge adapts a function that asks a judge model and returns its
// reply into a Judge that scores 1 for YES and 0 for NO (ParseVerdict),
// VAGEN's binary matching score I (§5.1). A reply without a verdict is an
// error wrapping ErrVerdict, which AskJudge reports as a failed judge
// rather than scoring it 0: a garbled judge is not the policy's fault.
type VerdictJudge func(ctx context.Context, req JudgeRequest) (reply string, err error)

// Judge implements Judge.
func (f VerdictJudge) Judge(ctx context.Context, req JudgeRequest) (float64, error) {
	reply, err := f(ctx, req)
	if err != nil {
		return 0, err
	}
	yes, err := ParseVerdict(reply)
	if err != nil {
		return 0, err
	}
	if yes {
		return 1, nil
	}
	return 0, nil
}
