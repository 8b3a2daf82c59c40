// Package parallel runs the independent pieces of a job on a fixed pool of
// worker goroutines without allocating.
//
// Hot loops in rlpost split a batch into pieces (usually rows) whose results
// go to separate slots, then combine the slots in a fixed order, so the
// result does not depend on how many workers ran or which took which piece.
// Starting goroutines per call would allocate and cost microseconds; the
// pool is started once and fed through a channel, and the per-call state
// is recycled through a Free list.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Job is work made of independent pieces 0..n-1. Run may be called from
// several goroutines at once, each time with a different piece.
type Job interface {
	Run(piece int)
}

type call struct {
	job      Job
	n        int64 // pieces
	rows     int   // rows; piece i is rows [i·chunk, min((i+1)·chunk, rows))
	chunk    int
	next     atomic.Int64
	finished atomic.Int64 // helpers done with this call
	wg       sync.WaitGroup
}

func (c *call) work() {
	for {
		i := c.next.Add(1) - 1
		if i >= c.n {
			return
		}
		lo := int(i) * c.chunk
		for r, hi := lo, min(lo+c.chunk, c.rows); r < hi; r++ {
			c.job.Run(r)
		}
	}
}

var (
	startOnce sync.Once
	queue     chan *call
	calls     = NewFree[call](64)
)

func start() {
	workers := runtime.GOMAXPROCS(0) - 1
	queue = make(chan *call, 64)
	for range workers {
		go func() {
			for c := range queue {
				c.work()
				c.finished.Add(1)
				c.wg.Done()
			}
		}()
	}
}

// yieldFor bounds how long Do yields waiting for its helpers before it
// blocks.
const yieldFor = 5 * time.Millisecond

// Workers returns how many goroutines a Do call may use, the caller's
// included.
func Workers() int { return runtime.GOMAXPROCS(0) }

// Do runs job.Run(i) for every i in [0, n) and returns when all are done.
// The calling goroutine takes part. With helpers ≤ 0 or n ≤ 1 the pieces run
// in order on the calling goroutine; otherwise up to helpers pool workers
// join in. Do is safe for concurrent use; nested calls run serially inside
// the pieces that make them rather than deadlocking, because the caller
// always works through the pieces itself.
func Do(job Job, n, helpers int) { do(job, n, 1, helpers) }

// do runs job over rows [0, rows) in pieces of chunk consecutive rows.
func do(job Job, rows, chunk, helpers int) {
	if rows <= 0 {
		return
	}
	n := (rows + chunk - 1) / chunk
	helpers = min(helpers, n-1, runtime.GOMAXPROCS(0)-1)
	if helpers <= 0 {
		for i := range rows {
			job.Run(i)
		}
		return
	}
	startOnce.Do(start)
	c := calls.Get()
	c.job, c.n, c.rows, c.chunk = job, int64(n), rows, chunk
	c.next.Store(0)
	c.finished.Store(0)
	sent := 0
	for range helpers {
		c.wg.Add(1)
		select {
		case queue <- c:
			sent++
		default:
			// Every worker is busy with other calls; this call's
			// goroutine does the work itself instead of waiting.
			c.wg.Done()
		}
	}
	c.work()
	// The helpers usually finish within a moment of the caller. Yielding
	// until they have beats blocking in Wait, which parks the goroutine and
	// so allocates whenever a garbage collection has emptied the runtime's
	// cache of wait records.
	// A helper woken from sleep can take a millisecond to arrive (a
	// virtual CPU being rescheduled); yield for up to a few of those.
	var deadline time.Time
	for spins := 0; c.finished.Load() < int64(sent); spins++ {
		if spins%64 == 0 {
			if now := time.Now(); deadline.IsZero() {
				deadline = now.Add(yieldFor)
			} else if now.After(deadline) {
				break
			}
		}
		runtime.Gosched()
	}
	c.wg.Wait()
	c.job = nil
	calls.Put(c)
}
