// Package fakejudge holds the scoring rule of the test judges in package
// rewards (the deprecated FakeJudge) and rewardstest, so that the two
// cannot drift apart.
package fakejudge

import (
	"context"
	"time"

	"github.com/rlpost/rlpost/verifiers"
)

// Score waits delay (or until ctx is done), then fails with err when it is
// set, and otherwise returns the token Jaccard index of response and
// reference (verifiers.Tokens).
func Score(ctx context.Context, delay time.Duration, err error, response, reference string) (float64, error) {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	return verifiers.Jaccard(verifiers.Tokens(response), verifiers.Tokens(reference)), nil
}
