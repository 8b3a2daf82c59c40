package rewardstest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFakeJudge(t *testing.T) {
	var j rewardstest.FakeJudge
	if _, ok := j.Last(); ok {
		t.Fatal("Last before any call reports a request")
	}
	req := rewards.JudgeRequest{Prompt: "q", Response: "a cat sat", Reference: "a cat"}
	s, err := j.Judge(context.Background(), req)
	require.NoError(t, err, "Judge: want 2/3 (token Jaccard)")
	require.Equal(t, 2.0/3, s, "Judge: want 2/3 (token Jaccard)")
	if last, ok := j.Last(); !ok || last != req || j.Calls() != 1 {
		t.Errorf("Last = %+v, %v; Calls = %d", last, ok, j.Calls())
	}
	boom := errors.New("boom")
	_, err = (&rewardstest.FakeJudge{Err: boom}).Judge(context.Background(), req)
	assert.ErrorIs(t, err, boom, "Err is not returned")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = (&rewardstest.FakeJudge{Delay: time.Hour}).Judge(ctx, req)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Delay does not honour the context")
}
