// Package bench measures the ops of `rlpost bench` the same way everywhere
// (docs/conformance.md, "rlpost bench"): a seeded random batch of B×T tokens with
// a prefix mask of lengths between T/2 and T, two warm-up calls, then iters
// timed calls; ns per token comes from the median call over all B·T
// positions, and allocations are counted over the timed calls.
package bench

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
)

// Iteration is one timed call of an op.
type Iteration func() error

// Setup prepares an op on a batch and returns the call to time. Work that a
// trainer does once (allocating outputs, uploading to a device) belongs in
// Setup; copy, if non-nil, is a host↔device round trip of the inputs timed
// separately (copy_ns_per_token).
type Setup func(d *benchdata.Batch) (iter Iteration, copy Iteration, err error)

// ErrUnavailable is returned for a device this build or machine lacks.
var ErrUnavailable = errors.New("device not available in this build")

type key struct{ op, device string }

var setups = map[key]Setup{}

// Register adds the setup of op on device ("cpu" or "cuda"); each op's file
// registers itself in init.
func Register(op, device string, s Setup) {
	k := key{op, device}
	if _, dup := setups[k]; dup {
		panic("bench: " + op + " on " + device + " registered twice")
	}
	setups[k] = s
}

// Ops returns the ops registered for device, sorted.
func Ops(device string) []string {
	var ops []string
	for k := range setups {
		if k.device == device {
			ops = append(ops, k.op)
		}
	}
	sort.Strings(ops)
	return ops
}

// Result is one line of `rlpost bench` output; the JSON names are fixed by
// docs/conformance.md.
type Result struct {
	Op             string   `json:"op"`
	B              int      `json:"B"`
	T              int      `json:"T"`
	Tokens         int      `json:"tokens"`
	NsPerToken     float64  `json:"ns_per_token"`
	TokensPerSec   float64  `json:"tokens_per_sec"`
	AllocsPerIter  float64  `json:"allocs_per_iter"`
	CopyNsPerToken *float64 `json:"copy_ns_per_token,omitempty"`
}

// Run measures op on device.
func Run(op, device string, b, t, iters int) (Result, error) {
	setup, ok := setups[key{op, device}]
	if !ok {
		if ops := Ops(device); len(ops) > 0 {
			return Result{}, fmt.Errorf("bench: op %q not available on %s (one of %s)", op, device, strings.Join(ops, ", "))
		}
		return Result{}, fmt.Errorf("bench: device %q: %w", device, ErrUnavailable)
	}
	switch {
	case b < 1 || t < 1:
		return Result{}, fmt.Errorf("bench: -B %d -T %d: both must be ≥ 1", b, t)
	case iters < 1:
		return Result{}, fmt.Errorf("bench: -iters %d: must be ≥ 1", iters)
	case t > 1<<26 || b > 1<<26 || b*t > 1<<28:
		return Result{}, fmt.Errorf("bench: -B %d -T %d: at most 2^28 tokens", b, t)
	}
	d, err := benchdata.New(b, t)
	if err != nil {
		return Result{}, fmt.Errorf("bench: %v", err)
	}
	iter, cp, err := setup(d)
	if err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", op, err)
	}
	return timeOp(op, d, iter, cp, iters)
}

// timeOp makes two warm-up calls of iter, then times iters calls (and as
// many of cp, if non-nil).
func timeOp(op string, d *benchdata.Batch, iter, cp Iteration, iters int) (Result, error) {
	for range 2 {
		if err := iter(); err != nil {
			return Result{}, fmt.Errorf("bench: %s: %w", op, err)
		}
	}
	// Collect now, so that a cycle started by building the batch does not
	// finish during the timed calls: its background workers allocate, and
	// the count would charge them to the op.
	runtime.GC()
	parallel.Settle()
	if err := iter(); err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", op, err)
	}
	median, allocs, err := timeCalls(iter, iters)
	if err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", op, err)
	}
	b, t := d.Shape.B, d.Shape.T
	n := float64(b) * float64(t)
	res := Result{
		Op: op, B: b, T: t, Tokens: d.Valid,
		NsPerToken:    median / n,
		TokensPerSec:  n / median * 1e9,
		AllocsPerIter: allocs,
	}
	if cp != nil {
		m, _, err := timeCalls(cp, iters)
		if err != nil {
			return Result{}, fmt.Errorf("bench: %s copy: %w", op, err)
		}
		c := m / n
		res.CopyNsPerToken = &c
	}
	return res, nil
}

// timeCalls returns the median duration of iters calls in nanoseconds and
// the heap allocations per call.
func timeCalls(iter Iteration, iters int) (median, allocs float64, err error) {
	times := make([]float64, iters)
	// No collection may start during the timed calls: its background
	// workers allocate, and the count would charge them to the op, which
	// allocates nothing (the fractional allocations per call that runs
	// used to report). The batch is built and collected already, so the
	// heap does not grow meanwhile.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range times {
		start := time.Now()
		if err := iter(); err != nil {
			return 0, 0, err
		}
		times[i] = float64(time.Since(start).Nanoseconds())
	}
	runtime.ReadMemStats(&after)
	slices.Sort(times)
	median = times[iters/2]
	if iters%2 == 0 {
		median = (times[iters/2-1] + times[iters/2]) / 2
	}
	return median, float64(after.Mallocs-before.Mallocs) / float64(iters), nil
}
