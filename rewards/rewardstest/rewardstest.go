// Package rewardstest provides test doubles for package rewards: a
// deterministic judge that stands in for a model behind rewards.Judge, for
// trainers' and services' own tests as much as this module's.
package rewardstest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/internal/fakejudge"
)

// FakeJudge is a deterministic rewards.Judge: it scores the token Jaccard
// index of Response and Reference (verifiers.Tokens), after waiting Delay
// (or until ctx is done), or fails with Err when that is set. It counts its
// calls and keeps the last request. Use a pointer; it is safe for
// concurrent use.
type FakeJudge struct {
	Delay time.Duration
	Err   error
	calls atomic.Int64
	last  atomic.Pointer[rewards.JudgeRequest]
}

// Judge implements rewards.Judge.
func (f *FakeJudge) Judge(ctx context.Context, req rewards.JudgeRequest) (float64, error) {
	f.calls.Add(1)
	f.last.Store(&req)
	return fakejudge.Score(ctx, f.Delay, f.Err, req.Response, req.Reference)
}

// Calls returns how many times Judge was called.
func (f *FakeJudge) Calls() int64 { return f.calls.Load() }

// Last returns the last request Judge received, and false before the
// first.
func (f *FakeJudge) Last() (rewards.JudgeRequest, bool) {
	if r := f.last.Load(); r != nil {
		return *r, true
	}
	return rewards.JudgeRequest{}, false
}
