package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlpost/rlpost/internal/tool/verifyline"
	"github.com/rlpost/rlpost/verifiers"
)

// item is one verifier call of a request.
type item struct {
	// raw, when set, is a /verify item still to be parsed; the worker
	// parses it, so that the parsing of a large batch is spread over the
	// workers rather than done by the request's goroutine.
	raw []byte
	// verifier, pred, gold and params are the call.
	verifier   string
	pred, gold string
	params     verifiers.Params
}

// outcome is what became of an item.
type outcome struct {
	res verifiers.Result
	// err is a failure to score: a malformed /verify item, a reference or
	// parameter the verifier rejected, a verifier's panic.
	err error
	// timeout: the call ran past Config.Timeout; the item scores 0.
	timeout bool
	// cancelled: the client went away before the item was scored; nobody
	// reads this answer.
	cancelled bool
}

// batch is one request's items on their way through the worker pool. Each
// item is answered exactly once, by its worker or by its deadline,
// whichever comes first (state guards it), so that a verifier that ignores
// its context delays neither the request nor the items after it.
type batch struct {
	ctx      context.Context
	endpoint string
	items    []item
	out      []outcome
	state    []atomic.Bool // true once answered
	pending  sync.WaitGroup
	s        *Server
}

func (s *Server) newBatch(ctx context.Context, endpoint string, n int) *batch {
	b := &batch{ctx: ctx, endpoint: endpoint, items: make([]item, n), out: make([]outcome, n), state: make([]atomic.Bool, n), s: s}
	b.pending.Add(n)
	s.metrics.itemsInFlight.Add(float64(n))
	return b
}

// answer records the outcome of item i unless it was answered already.
func (b *batch) answer(i int, o outcome) {
	if !b.state[i].CompareAndSwap(false, true) {
		return
	}
	b.out[i] = o
	b.s.metrics.itemsInFlight.Dec()
	b.pending.Done()
}

// itemShape bounds one item's JSON (a /verify item, a label object)
// before it is decoded: its params are at most verifiers.MaxParams keys of
// scalars or arrays of at most verifiers.MaxParamItems scalars, so
// anything larger or deeper is refused unread.
var itemShape = shapeLimits{
	items:  max(verifiers.MaxParams, verifiers.MaxParamItems),
	depth:  4,
	values: verifiers.MaxParams*(verifiers.MaxParamItems+1) + 16,
}

// job is one item of one batch in the queue.
type job struct {
	b *batch
	i int
}

var errCancelled = errors.New("request cancelled")

// run schedules every item of b on the shared pool and waits until each is
// answered. Items wait in the queue in arrival order, so the items of
// concurrent requests interleave and a one-item request is not stuck
// behind a whole large batch.
func (b *batch) run() {
	for i := range b.items {
		if b.state[i].Load() {
			continue // failed before scoring (a bad label)
		}
		select {
		case b.s.jobs <- job{b, i}:
		case <-b.ctx.Done():
			for k := i; k < len(b.items); k++ {
				b.answer(k, outcome{cancelled: true, err: errCancelled})
			}
			b.pending.Wait()
			return
		}
	}
	b.pending.Wait()
}

// worker takes jobs until the queue is closed.
func (s *Server) worker() {
	defer s.workersDone.Done()
	// The duration histogram of each registered verifier this worker has
	// run, so that an item costs no label lookup; bounded by the registry.
	hist := map[string]prometheus.Observer{}
	for j := range s.jobs {
		s.score(j.b, j.i, hist)
	}
}

// score runs one item under its own deadline.
func (s *Server) score(b *batch, i int, hist map[string]prometheus.Observer) {
	if b.state[i].Load() {
		return
	}
	if b.ctx.Err() != nil {
		b.answer(i, outcome{cancelled: true, err: errCancelled})
		return
	}
	it := &b.items[i]
	if it.raw != nil {
		if v := checkShape(it.raw, itemShape); v != nil {
			b.answer(i, outcome{err: itemErr(ReasonTooLarge, "item: %v", v)})
			return
		}
		req, err := verifyline.Parse(it.raw)
		if err != nil {
			b.answer(i, outcome{err: &itemError{kind: ReasonBadItem, err: err}})
			return
		}
		it.verifier, it.pred, it.gold, it.params = req.Verifier, *req.Pred, req.Gold, req.Params
		it.raw = nil
	}
	if err := s.cfg.Caps.check(it.params); err != nil {
		b.answer(i, outcome{err: err})
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, s.cfg.Timeout)
	defer cancel()
	// The deadline answers the item even while the verifier still runs;
	// this worker stays busy until the verifier returns, so the number of
	// verifier calls running never exceeds Config.Workers.
	stop := context.AfterFunc(ctx, func() { b.answer(i, expired(b.ctx)) })
	start := time.Now()
	res, err := s.call(ctx, it)
	h := hist[it.verifier]
	if h == nil {
		label := s.verifierLabel(it.verifier)
		h = s.metrics.itemSeconds.WithLabelValues(label)
		if label == it.verifier {
			hist[label] = h
		}
	}
	h.Observe(time.Since(start).Seconds())
	if !stop() {
		return // answered by the deadline
	}
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		b.answer(i, outcome{timeout: true})
	case err != nil && b.ctx.Err() != nil:
		b.answer(i, outcome{cancelled: true, err: errCancelled})
	default:
		// A verifier that stops at its own budget says so in the result;
		// it counts as a timeout like one stopped by the deadline here.
		b.answer(i, outcome{res: res, err: err, timeout: err == nil && res.Timeout})
	}
}

// expired is the outcome of an item whose context ended first: a timeout,
// unless the request itself was cancelled.
func expired(reqCtx context.Context) outcome {
	if reqCtx.Err() != nil {
		return outcome{cancelled: true, err: errCancelled}
	}
	return outcome{timeout: true}
}

// call runs the verifier; a panic becomes the item's error.
func (s *Server) call(ctx context.Context, it *item) (res verifiers.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = verifiers.Result{}, itemErr(ReasonPanic, "verifier %s panicked: %v", it.verifier, p)
		}
	}()
	return s.cfg.Registry.Verify(ctx, it.verifier, it.pred, it.gold, it.params)
}

// wire is the verify-contract form of an outcome: a result, or an error
// text.
func (o *outcome) wire(timeout time.Duration) (verifyline.Result, error) {
	switch {
	case o.timeout:
		return verifyline.Result{Timeout: true, Reason: o.timeoutReason(timeout)}, nil
	case o.err != nil:
		return verifyline.Result{}, o.err
	}
	return verifyline.FromVerifier(o.res), nil
}

// timeoutReason is the verifier's own reason when it stopped itself, else
// the service's deadline.
func (o *outcome) timeoutReason(timeout time.Duration) string {
	if o.res.Reason != "" {
		return o.res.Reason
	}
	return fmt.Sprintf("timeout: verifier ran past %v", timeout)
}
