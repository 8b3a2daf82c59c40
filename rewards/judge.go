package rewards

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rlpost/rlpost/rewards/internal/fakejudge"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// JudgeRequest is what an LLM-as-a-judge scores.
type JudgeRequest struct {
	// Prompt is the task as the policy saw it (may be empty).
	Prompt string
	// Response is the text judged: a whole response, its <think> block
	// (AVATAR's R_judge), or a state description (VAGEN's G(o_t), W(o_t)).
	Response string
	// Reference is what the response should agree with: a ground-truth
	// answer, or the true state s_t or s_{t+1} in words (may be empty).
	Reference string
}

// Judge scores a response in [0, 1], typically by asking a frozen model
// (AVATAR's InternVL3 judge, VAGEN's LLM-as-a-judge). The library ships no
// model: callers implement Judge around theirs. Implementations must honour
// ctx (return promptly with ctx.Err() once it is done) and be safe for
// concurrent use.
type Judge interface {
	Judge(ctx context.Context, req JudgeRequest) (float64, error)
}

// JudgeFunc adapts a function to the Judge interface.
type JudgeFunc func(ctx context.Context, req JudgeRequest) (float64, error)

// Judge calls f.
func (f JudgeFunc) Judge(ctx context.Context, req JudgeRequest) (float64, error) { return f(ctx, req) }

// ErrJudge wraps failures of a judge: its own errors and scores outside
// [0, 1].
var ErrJudge = errors.New("judge failed")

// AskJudge asks j for a score with a deadline of timeout (0: only ctx's)
// and checks the answer: an error, a timeout or a score that is NaN or
// outside [0, 1] is returned as an error wrapping ErrJudge (and the context
// error, when that is the cause).
func AskJudge(ctx context.Context, j Judge, req JudgeRequest, timeout time.Duration) (float64, error) {
	if j == nil {
		return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrEmpty, "j", nil, "nil judge"))
	}
	if timeout < 0 {
		return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "timeout", nil, "%v, want ≥ 0", timeout))
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("rewards: %w: %w", ErrJudge, err)
	}
	s, err := j.Judge(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("rewards: %w: %w", ErrJudge, err)
	}
	if !(s >= 0 && s <= 1) {
		return 0, fmt.Errorf("rewards: %w: score %v, want a number in [0, 1]", ErrJudge, s)
	}
	return s, nil
}

// JudgeVerifier makes a Judge usable as a verifier (for routing): it
// returns the verifiers.Factory that reads the optional parameters
// "prompt" (a string, the prompt) and "pass" (Correct means a score ≥
// pass, default 0.5, in [0, 1]) once, and whose verifier asks j about the
// response against the reference, each call with the given timeout (0:
// none). Register it under a name of the caller's choice, e.g.
// verifiers.Register("judge", rewards.JudgeVerifier(j, 30*time.Second)).
func JudgeVerifier(j Judge, timeout time.Duration) verifiers.Factory {
	return func(p verifiers.Params) (verifiers.Verifier, error) {
		if j == nil {
			return nil, fmt.Errorf("rewards: judge: %w", tensor.Errorf(verifiers.ErrParam, "j", nil, "nil Judge"))
		}
		if err := p.Only("prompt", "pass"); err != nil {
			return nil, fmt.Errorf("rewards: judge: %w", err)
		}
		prompt, err := p.String("prompt", "")
		if err != nil {
			return nil, fmt.Errorf("rewards: judge: %w", err)
		}
		pass, err := p.Float("pass", 0.5)
		if err != nil {
			return nil, fmt.Errorf("rewards: judge: %w", err)
		}
		if pass < 0 || pass > 1 {
			return nil, fmt.Errorf("rewards: judge: %w", tensor.Errorf(verifiers.ErrParam, `params["pass"]`, nil, "%v, want a number in [0, 1]", pass))
		}
		return verifiers.Func(func(ctx context.Context, response, reference string) (verifiers.Result, error) {
			s, err := AskJudge(ctx, j, JudgeRequest{Prompt: prompt, Response: response, Reference: reference}, timeout)
			if err != nil {
				return verifiers.Result{}, err
			}
			return verifiers.Result{Score: s, Correct: s >= pass, Parsed: response}, nil
		}), nil
	}
}

// FakeJudge is a deterministic Judge for tests: it scores the token
// Jaccard index of Response and Reference (verifiers.Tokens), after
// waiting Delay (or until ctx is done), or fails with Err when that is
// set. It counts its calls. Use a pointer; it is safe for concurrent use.
//
// Deprecated: test doubles live in package rewardstest; use
// rewardstest.FakeJudge, which behaves the same. FakeJudge is kept for one
// release.
type FakeJudge struct {
	Delay time.Duration
	Err   error
	calls atomic.Int64
}

// Judge implements Judge.
func (f *FakeJudge) Judge(ctx context.Context, req JudgeRequest) (float64, error) {
	f.calls.Add(1)
	return fakejudge.Score(ctx, f.Delay, f.Err, req.Response, req.Reference)
}

// Calls returns how many times Judge was called.
func (f *FakeJudge) Calls() int64 { return f.calls.Load() }
