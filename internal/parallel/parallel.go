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
	finished atomic.Int64 // helpers done with this call; they touch it no more
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
			for {
				c := receive()
				c.work()
				c.finished.Add(1)
			}
		}()
	}
}

// spinFor is how long a worker keeps looking for the next call after
// finishing one before it naps. Waking a parked worker takes tens of
// microseconds on a virtual machine, which on a call of a few hundred
// (one op on a 64×4096 batch) left the helper a fifth of the rows; the
// phases of one op and consecutive ops come back to back, so a worker that
// waits a moment awake takes its half.
const spinFor = 200 * time.Microsecond

// napsFor is how long a worker then naps between checks of growing
// length, up to a millisecond, before it parks on the queue. A call sent to
// a parked worker lands in the sender's run queue, behind the sender's own
// work, where it waited for the whole call in about half of the runs
// measured; a napping worker finds it within a millisecond. Parking after a
// second of idleness keeps an idle process quiet; the first call after it
// may run without its helper. A worker asleep through the start of a call
// costs only speed: the caller takes the call back (see Do).
const napsFor = time.Second

// receive returns the next call from the queue: yielding for up to
// spinFor, napping for up to napsFor, then blocking.
func receive() *call {
	var start time.Time
	nap := time.Duration(0)
	for spins := 0; ; spins++ {
		select {
		case c := <-queue:
			return c
		default:
		}
		if nap == 0 && spins%32 == 0 {
			if now := time.Now(); start.IsZero() {
				start = now
			} else if now.Sub(start) > spinFor {
				nap = 20 * time.Microsecond
			}
		}
		switch {
		case nap == 0:
			runtime.Gosched()
		case time.Since(start) > napsFor:
			return <-queue
		default:
			time.Sleep(nap)
			nap = min(2*nap, time.Millisecond)
			if missed.Swap(false) {
				// A caller took back a call this worker slept through:
				// calls are coming, so stay awake for the next.
				start, nap = time.Now(), 0
			}
		}
	}
}

// missed is set when a caller takes back a call no worker picked up.
var missed atomic.Bool

// Settle lets the pool's workers come to rest: a benchmark calls it after
// its warm-up calls so that the one-time growth of the runtime's per-CPU
// structures (timer heaps, wait records) as idle workers nap and park
// falls before its timed calls, not inside them.
func Settle() { time.Sleep(settleFor) }

// settleFor is long enough for a worker to reach its longest nap, and well
// short of napsFor.
const settleFor = 20 * time.Millisecond

// yieldFor bounds how long Do yields waiting for its helpers before it
// sleeps between checks.
const yieldFor = 5 * time.Millisecond

// napFor is how long Do sleeps between checks once yieldFor has passed: a
// helper that late was descheduled by the operating system, and polling
// faster would only take the core from it.
const napFor = 50 * time.Microsecond

// Workers returns how many goroutines a Do call may use, the caller's
// included.
func Workers() int {
	n := runtime.GOMAXPROCS(0)
	if m := int(maxWorkers.Load()); m > 0 {
		n = min(n, m)
	}
	return n
}

// maxWorkers is the bound of SetMax; 0 for none.
var maxWorkers atomic.Int64

// SetMax bounds Workers to n (n ≤ 0: no bound beyond GOMAXPROCS) and
// returns the previous bound (the public face is package workers).
func SetMax(n int) int {
	return int(maxWorkers.Swap(int64(max(n, 0))))
}

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
	helpers = min(helpers, n-1, Workers()-1)
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
		select {
		case queue <- c:
			sent++
		default:
			// Every worker is busy with other calls; this call's
			// goroutine does the work itself instead of waiting.
		}
	}
	c.work()
	// The helpers usually finish within a moment of the caller. Yielding
	// until they have beats blocking on a WaitGroup or channel, which parks
	// the goroutine on a wait record that the runtime allocates whenever a
	// garbage collection has emptied its cache of them: the fractional
	// allocations per call that `rlpost bench` used to report. A helper
	// woken from sleep can take a millisecond to arrive (a virtual CPU
	// being rescheduled); past yieldFor the caller sleeps between checks,
	// which parks it without a wait record (its timer is made once per
	// goroutine) and leaves the core to the helper.
	var deadline time.Time
	late := false
	for spins := 0; c.finished.Load() < int64(sent); spins++ {
		// A call still in the queue has no helper yet: run it here, be it
		// this call (nothing left to do, so that is taking it back from a
		// worker that is asleep) or another's.
		select {
		case o := <-queue:
			if o == c {
				missed.Store(true)
			}
			o.work()
			o.finished.Add(1)
			continue
		default:
		}
		if !late && spins%64 == 0 {
			if now := time.Now(); deadline.IsZero() {
				deadline = now.Add(yieldFor)
			} else {
				late = now.After(deadline)
			}
		}
		if late {
			time.Sleep(napFor)
		} else {
			runtime.Gosched()
		}
	}
	c.job = nil
	calls.Put(c)
}
