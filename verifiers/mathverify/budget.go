package mathverify

import (
	"context"
	"errors"
	"time"
)

// errTimeout is returned when Options.Timeout runs out.
var errTimeout = errors.New("mathverify: time budget exhausted")

// budget is the per-call time limit. ok is called in every loop that can
// run long; it looks at the clock every 64 calls to stay cheap.
type budget struct {
	ctx      context.Context
	deadline time.Time
	// grace is the deadline for a call that has done little work: a
	// typical verification takes under 200 steps, so one that passes
	// Options.Timeout after fewer than minBudgetSteps was descheduled, not
	// expensive, and gets graceFactor times the time before it stops.
	grace time.Time
	timed bool
	n     int
	err   error
}

// Time-budget grace for cheap calls on a loaded machine.
const (
	minBudgetSteps = 256
	graceFactor    = 4
)

func newBudget(ctx context.Context, timeout time.Duration) *budget {
	b := &budget{ctx: ctx}
	if timeout > 0 {
		now := time.Now()
		b.deadline, b.grace, b.timed = now.Add(timeout), now.Add(graceFactor*timeout), true
	}
	return b
}

func (b *budget) ok() bool {
	if b == nil {
		return true
	}
	if b.err != nil {
		return false
	}
	b.n++
	if b.n&63 != 0 {
		return true
	}
	return b.check()
}

func (b *budget) check() bool {
	if b.err != nil {
		return false
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return false
	}
	if b.timed {
		now := time.Now()
		if now.After(b.deadline) && (b.n >= minBudgetSteps || now.After(b.grace)) {
			b.err = errTimeout
			return false
		}
	}
	return true
}
