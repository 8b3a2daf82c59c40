package serve

import (
	"context"
	"testing"
	"time"
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
	if err := b.acquire(cctx, 2); err == nil {
		t.Fatal("a later small request overtook a waiting large one")
	}
	b.release(8)
	select {
	case <-bigGot:
	case <-time.After(time.Second):
		t.Fatal("the large request was not granted after the release")
	}
	b.release(10)
	if b.free != 10 || len(b.waiters) != 0 {
		t.Errorf("free %d, %d waiters after everything was released", b.free, len(b.waiters))
	}
}

func TestBudgetCancelledWaiterLeavesNoDebt(t *testing.T) {
	b := newBudget(4)
	must(t, b.acquire(context.Background(), 4))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.acquire(ctx, 3) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled acquire succeeded")
	}
	b.release(4)
	if b.free != 4 || len(b.waiters) != 0 {
		t.Errorf("free %d, %d waiters", b.free, len(b.waiters))
	}
}
