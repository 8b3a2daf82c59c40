package mathverify

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Work budgets. A call is bounded by the work it does, counted, so that the
// same input gets the same verdict on any machine and under any load: a
// call that needs more is a verdict of 0 with a reason that begins
// "budget:". Both limits are far above what any answer a person would
// write needs (the Math-Verify suite and chains of thought of 8 KiB take
// under 2 500 steps; 1000! costs 18 000 word operations) and far below 50 ms of work.
const (
	// maxSteps bounds the steps of one call: one step is one call of
	// budget.ok, made in every loop and recursion of parsing, evaluation
	// and comparison, each a bounded amount of work.
	maxSteps = 40_000
	// maxWordOps bounds exact big-number arithmetic, counted in products
	// of 64-bit words: an operation on rationals of a and b words costs
	// (a+b)², its normalising gcd's order, charged before it runs.
	maxWordOps = 1 << 21
)

// ErrBudget is the kind of a work limit hit. It never reaches the caller
// as an error: the verdict is a score of 0 whose Result.Reason begins
// "budget:".
var ErrBudget = errors.New("budget")

// errTimeout is returned when Options.Timeout runs out.
var errTimeout = errors.New("mathverify: time budget exhausted")

// wallTimeouts counts the calls stopped by Options.Timeout: the wall-clock
// budget is a last resort behind the work budgets, and each hit is a
// verdict that another machine could have decided differently.
var wallTimeouts atomic.Uint64

// WallTimeouts returns how many Verify calls of this process were stopped
// by Options.Timeout (not by a work budget or the context). It should stay
// 0: every hostile input the tests know is stopped by a work budget first.
func WallTimeouts() uint64 { return wallTimeouts.Load() }

// budget is the per-call work and time limit. ok is called in every loop
// that can run long; it counts a step and looks at the clock every 64
// steps to stay cheap.
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
	words int64
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
	if b.n > maxSteps {
		b.err = fmt.Errorf("%w: over %d steps", ErrBudget, maxSteps)
		return false
	}
	if b.n&63 != 0 {
		return true
	}
	return b.check()
}

// bigOp charges an exact operation on operands of bits1 and bits2 bits
// and reports whether the budget allows it; it is called before the
// operation runs, so that no single operation overshoots.
func (b *budget) bigOp(bits1, bits2 int) bool {
	if b == nil {
		return true
	}
	if !b.ok() {
		return false
	}
	w := int64(bits1+bits2)/64 + 1
	b.words += w * w
	if b.words > maxWordOps {
		b.err = fmt.Errorf("%w: exact arithmetic over %d word operations", ErrBudget, maxWordOps)
		return false
	}
	return true
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
			wallTimeouts.Add(1)
			return false
		}
	}
	return true
}

// reason is Result.Reason for a call its budget stopped.
func (b *budget) reason() string {
	if errors.Is(b.err, ErrBudget) {
		return b.err.Error()
	}
	return "timeout: " + b.err.Error()
}

// timeout reports whether the budget stopped the call by the clock (the
// context's deadline or Options.Timeout) rather than by work.
func (b *budget) timeout() bool { return b.err != nil && !errors.Is(b.err, ErrBudget) }
