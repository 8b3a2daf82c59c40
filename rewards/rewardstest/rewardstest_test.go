package rewardstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
)

func TestFakeJudge(t *testing.T) {
	var j rewardstest.FakeJudge
	if _, ok := j.Last(); ok {
		t.Fatal("Last before any call reports a request")
	}
	req := rewards.JudgeRequest{Prompt: "q", Response: "a cat sat", Reference: "a cat"}
	s, err := j.Judge(context.Background(), req)
	if err != nil || s != 2.0/3 {
		t.Fatalf("Judge = %v, %v; want 2/3 (token Jaccard)", s, err)
	}
	if last, ok := j.Last(); !ok || last != req || j.Calls() != 1 {
		t.Errorf("Last = %+v, %v; Calls = %d", last, ok, j.Calls())
	}
	boom := errors.New("boom")
	if _, err := (&rewardstest.FakeJudge{Err: boom}).Judge(context.Background(), req); !errors.Is(err, boom) {
		t.Errorf("Err is not returned: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := (&rewardstest.FakeJudge{Delay: time.Hour}).Judge(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Delay does not honour the context: %v", err)
	}
}
