package serve

import (
	"context"
	"sync"
)

// budget is a weighted semaphore over request body bytes, first come first
// served, so that one large request waiting for room is not overtaken
// forever by a stream of small ones, with a share per client: the bytes
// held by one client never exceed share, so that one client cannot take
// all of it. A waiter held back by its client's share does not hold back
// the waiters of other clients behind it.
type budget struct {
	mu      sync.Mutex
	free    int64
	share   int64
	held    map[string]int64 // by client; absent when 0
	waiters []*waiter
}

type waiter struct {
	client string
	n      int64
	ready  chan struct{}
}

func newBudget(n, share int64) *budget {
	return &budget{free: n, share: share, held: map[string]int64{}}
}

// fits reports whether client may take n bytes now. b.mu is held.
func (b *budget) fits(client string, n int64) bool {
	return b.free >= n && b.held[client]+n <= b.share
}

func (b *budget) take(client string, n int64) {
	b.free -= n
	b.held[client] += n
}

// acquire takes n bytes of the budget for client, waiting while it is
// short, or returns ctx's error. n must not exceed the share.
func (b *budget) acquire(ctx context.Context, client string, n int64) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.fits(client, n) {
		b.take(client, n)
		b.mu.Unlock()
		return nil
	}
	w := &waiter{client: client, n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.grant() // the waiters ahead may all be held back by their shares
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.put(client, n)
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

// put returns n bytes of client. b.mu is held.
func (b *budget) put(client string, n int64) {
	b.free += n
	if h := b.held[client] - n; h > 0 {
		b.held[client] = h
	} else {
		delete(b.held, client)
	}
}

// release returns n bytes of client.
func (b *budget) release(client string, n int64) {
	b.mu.Lock()
	b.put(client, n)
	b.grant()
	b.mu.Unlock()
}

// grant wakes waiters in order: a waiter over its client's share is
// passed over, the first that does not fit the free bytes stops the scan.
// b.mu is held.
func (b *budget) grant() {
	kept := b.waiters[:0]
	blocked := false
	for _, w := range b.waiters {
		switch {
		case blocked || b.held[w.client]+w.n > b.share:
			kept = append(kept, w)
		case w.n > b.free:
			blocked = true
			kept = append(kept, w)
		default:
			b.take(w.client, w.n)
			close(w.ready)
		}
	}
	clear(b.waiters[len(kept):])
	b.waiters = kept
}
