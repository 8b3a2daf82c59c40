package serve

import (
	"context"
	"sync"
)

// budget is a weighted semaphore over request body bytes, first come first
// served, so that one large request waiting for room is not overtaken
// forever by a stream of small ones.
type budget struct {
	mu      sync.Mutex
	free    int64
	waiters []*waiter
}

type waiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(n int64) *budget { return &budget{free: n} }

// acquire takes n bytes of the budget, waiting while it is short, or
// returns ctx's error. n must not exceed the budget's size.
func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.free += n
		default:
			for i, x := range b.waiters {
				if x == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
		}
		b.grant()
		b.mu.Unlock()
		return ctx.Err()
	}
}

// release returns n bytes.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	b.grant()
	b.mu.Unlock()
}

// grant wakes waiters in order while the first fits. b.mu is held.
func (b *budget) grant() {
	for len(b.waiters) > 0 && b.waiters[0].n <= b.free {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.free -= w.n
		close(w.ready)
	}
}
