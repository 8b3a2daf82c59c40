package serve

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudgetIsFirstComeFirstServed(t *testing.T) {
	b := newBudget(10, 10)
	ctx := context.Background()
	must(t, b.acquire(ctx, "c", 8))
	bigGot := make(chan struct{})
	go func() {
		must(t, b.acquire(ctx, "b", 10)) // waits for the 8 to come back
		close(bigGot)
	}()
	time.Sleep(20 * time.Millisecond)
	// A small request arriving later waits behind the big one, though 2
	// bytes are free.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	require.Error(t, b.acquire(cctx, "c", 2), "a later small request overtook a waiting large one")
	b.release("c", 8)
	select {
	case <-bigGot:
	case <-time.After(time.Second):
		t.Fatal("the large request was not granted after the release")
	}
	b.release("b", 10)
	assert.Equal(t, int64(10), b.free, "free, %d waiters after everything was released", len(b.waiters))
	assert.Len(t, b.waiters, 0, "free, %d waiters after everything was released", len(b.waiters))
}

func TestBudgetCancelledWaiterLeavesNoDebt(t *testing.T) {
	b := newBudget(4, 4)
	must(t, b.acquire(context.Background(), "c", 4))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.acquire(ctx, "c", 3) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	require.Error(t, <-done, "cancelled acquire succeeded")
	b.release("c", 4)
	assert.Equal(t, int64(4), b.free, "free, %d waiters", len(b.waiters))
	assert.Len(t, b.waiters, 0, "free, %d waiters", len(b.waiters))
}

func TestBudgetShareHoldsOneClientBackNotOthers(t *testing.T) {
	b := newBudget(10, 6)
	ctx := context.Background()
	must(t, b.acquire(ctx, "greedy", 6))
	more := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		more <- b.acquire(cctx, "greedy", 1) // over its share though 4 are free
	}()
	time.Sleep(10 * time.Millisecond)
	// Another client behind the held-back waiter gets the free bytes.
	other, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	require.NoError(t, b.acquire(other, "other", 4), "a client was held back by another client's share")
	require.Error(t, <-more, "one client took more than its share")
	b.release("greedy", 6)
	b.release("other", 4)
	assert.Equal(t, int64(10), b.free)
	assert.Empty(t, b.held, "bytes still held after everything was released")
	assert.Empty(t, b.waiters)
}
