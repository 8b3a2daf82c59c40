package serve

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudgetIsFirstComeFirstServed(t *testing.T) {
	b := newBudget(10)
	ctx := context.Background()
	must(t, b.acquire(ctx, 8))
	bigGot := make(chan struct{})
	go func() {
		must(t, b.acquire(ctx, 10)) // waits for the 8 to come back
		close(bigGot)
	}()
	time.Sleep(20 * time.Millisecond)
	// A small request arriving later waits behind the big one, though 2
	// bytes are free.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	require.Error(t, b.acquire(cctx, 2), "a later small request overtook a waiting large one")
	b.release(8)
	select {
	case <-bigGot:
	case <-time.After(time.Second):
		t.Fatal("the large request was not granted after the release")
	}
	b.release(10)
	assert.Equal(t, int64(10), b.free, "free, %d waiters after everything was released", len(b.waiters))
	assert.Len(t, b.waiters, 0, "free, %d waiters after everything was released", len(b.waiters))
}

func TestBudgetCancelledWaiterLeavesNoDebt(t *testing.T) {
	b := newBudget(4)
	must(t, b.acquire(context.Background(), 4))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.acquire(ctx, 3) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	require.Error(t, <-done, "cancelled acquire succeeded")
	b.release(4)
	assert.Equal(t, int64(4), b.free, "free, %d waiters", len(b.waiters))
	assert.Len(t, b.waiters, 0, "free, %d waiters", len(b.waiters))
}
