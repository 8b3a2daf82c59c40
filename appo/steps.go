package appo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// grow returns s resized to n, reallocating only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// prepare validates a call and records its shape.
func (w *Weighter[F]) prepare(dst []F, in Inputs[F], cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if !tensor.IsFinite(F(1 + cfg.Alpha)) {
		return tensor.Errorf(tensor.ErrRange, "Config.Alpha", nil, "%v: weights up to 1 + α overflow %T", cfg.Alpha, F(0))
	}
	g := len(in.Rewards)
	if g == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "rewards", nil, "no responses")
	}
	if err := tensor.CheckFiniteVec("rewards", in.Rewards); err != nil {
		return err
	}
	if len(in.Attention) != g {
		return tensor.Errorf(tensor.ErrShape, "attention", nil, "%d responses, want one per reward: %d", len(in.Attention), g)
	}
	if in.Dists == nil {
		return tensor.Errorf(tensor.ErrEmpty, "dists", nil, "nil")
	}
	w.start = grow(w.start, g+1)
	w.start[0] = 0
	nf, first := 0, -1
	for i, a := range in.Attention {
		if a.Check("attention") != nil {
			// Check again with the index in the name; only on this
			// path, so that the good path formats nothing.
			return a.Check(fmt.Sprintf("attention[%d]", i))
		}
		if n := in.Dists.Len(i); n != a.B {
			return tensor.Errorf(tensor.ErrShape, "attention", tensor.At(i),
				"%d tokens (rows), but Dists.Len(%d) = %d", a.B, i, n)
		}
		if a.B > 0 {
			if first < 0 {
				nf, first = a.T, i
			} else if a.T != nf {
				return tensor.Errorf(tensor.ErrShape, "attention", tensor.At(i),
					"%d frames (columns), want %d like attention[%d]", a.T, nf, first)
			}
			for e, x := range a.Data {
				if !(x >= 0) || !tensor.IsFinite(x) {
					return badAttention("attention", tensor.At(i, e/nf, e%nf), float64(x))
				}
			}
		}
		if a.B > math.MaxInt-w.start[i] {
			return tensor.Errorf(tensor.ErrRange, "attention", tensor.At(i), "total token count overflows int")
		}
		w.start[i+1] = w.start[i] + a.B
	}
	// A group whose responses are all empty needs no distribution, so
	// only then may the source have no vocabulary.
	vocab := in.Dists.Vocab()
	if vocab < 1 && w.start[g] > 0 {
		return tensor.Errorf(tensor.ErrRange, "dists", nil, "Vocab() = %d, want ≥ 1", vocab)
	}
	if len(dst) != w.start[g] {
		return tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want one weight per token: %d", len(dst), w.start[g])
	}
	w.in, w.cfg, w.vocab, w.nf = in, cfg, vocab, nf
	w.entropies, _ = in.Dists.(Entropies)

	// One top-K buffer serves every selection: it never holds more than
	// min(K, n) indices.
	maxL := 0
	for _, a := range in.Attention {
		maxL = max(maxL, a.B)
	}
	w.top = grow(w.top, max(min(cfg.K1, maxL), min(cfg.K2, nf), min(cfg.K3, maxL)))
	return nil
}

// focus writes Attn(o_i, f_t) of Eq. 5–6 into dst[t] for every frame t of
// response attention a: the mean of the K1 largest values of column t
// (all of them when the response is shorter than K1; only the ranking of
// frames within the response matters, and the divisor is the same for
// all of them). The values are summed in rank order, so two frames whose
// top-K1 values are the same multiset get exactly the same focus and the
// tie goes to the lower frame.
func focus[F tensor.Float](dst []float64, top []int, a tensor.Batch[F], k1 int) {
	for t := range a.T {
		top = topK(top, a.Data, t, a.T, a.B, k1)
		s := 0.0
		for _, j := range top {
			s += float64(a.At(j, t))
		}
		dst[t] = s / float64(len(top))
	}
}

// selectFrames splits the responses by reward (Eq. 3), finds the top-K2
// frames of each (Eq. 7), their unions ψS1 and ψS2 (Eq. 8) and the target
// frames ψ′ of the strategy.
func (w *Weighter[F]) selectFrames() {
	nf, cfg := w.nf, w.cfg
	w.high, w.low = grow(w.high, nf), grow(w.low, nf)
	clear(w.high)
	clear(w.low)
	w.focus = grow(w.focus, nf)
	w.nHigh, w.nLow = 0, 0
	for i, a := range w.in.Attention {
		if a.B == 0 {
			continue
		}
		set := w.low
		if float64(w.in.Rewards[i]) >= cfg.Tau {
			set = w.high
			w.nHigh++
		} else {
			w.nLow++
		}
		focus(w.focus, w.top, a, cfg.K1)
		for _, t := range topK(w.top, w.focus, 0, 1, nf, cfg.K2) {
			set[t] = true
		}
	}
	w.frames, w.highFrames, w.lowFrames = w.frames[:0], w.highFrames[:0], w.lowFrames[:0]
	for t := range nf {
		h, l := w.high[t], w.low[t]
		if h {
			w.highFrames = append(w.highFrames, t)
		}
		if l {
			w.lowFrames = append(w.lowFrames, t)
		}
		if cfg.Strategy == Soft && h || cfg.Strategy == Hard && h && !l || cfg.Strategy == All && (h || l) {
			w.frames = append(w.frames, t)
		}
	}
}

// buildGroups forms the perception group Ω^(k) of every target frame
// (Eq. 9–10): the top-K3 tokens of each response by attention to the frame,
// rank s of each response in slot s.
func (w *Weighter[F]) buildGroups() {
	g := len(w.in.Rewards)
	w.slot = grow(w.slot, g+1)
	w.slot[0], w.nslots = 0, 0
	for i, a := range w.in.Attention {
		n := min(w.cfg.K3, a.B)
		w.slot[i+1] = w.slot[i] + n
		w.nslots = max(w.nslots, n)
	}
	n, tokens := w.slot[g], w.start[g]
	w.toks = grow(w.toks, len(w.frames)*n)
	w.d = grow(w.d, len(w.frames)*n)
	w.member = grow(w.member, tokens)
	clear(w.member)
	for k, f := range w.frames {
		for i, a := range w.in.Attention {
			if a.B == 0 {
				continue
			}
			seg := w.toks[k*n+w.slot[i] : k*n+w.slot[i+1]]
			topK(seg[:0:len(seg)], a.Data, f, a.T, a.B, w.cfg.K3)
			for s, j := range seg {
				seg[s] = w.start[i] + j
				w.member[w.start[i]+j]++
			}
		}
	}
	w.used, w.usedBy = w.used[:0], w.usedBy[:0]
	for i := range g {
		for t := w.start[i]; t < w.start[i+1]; t++ {
			if w.member[t] > 0 {
				w.used = append(w.used, t)
				w.usedBy = append(w.usedBy, i)
			}
		}
	}
}

// rowPass fetches the distribution of every token in a group, one token
// per piece, validates it, keeps it for the slot pass and records its
// Σ p log p. Each distribution is thus fetched and checked once however
// many groups its token is in.
type rowPass[F tensor.Float] struct{ w *Weighter[F] }

func (p rowPass[F]) Run(piece int) {
	w := p.w
	t, i := w.used[piece], w.usedBy[piece]
	j := t - w.start[i]
	sc := <-w.free
	if sc.spare == nil {
		sc.spare = w.take()
	}
	row, err := w.in.Dists.Dist(sc.spare, i, j)
	// A row written into the spare stays there until the call ends, and
	// the worker takes a new spare for its next token; any other row is
	// the source's own, which Distributions promises to keep unchanged.
	if err == nil && tensor.Overlaps(row, sc.spare) {
		sc.spare = nil
	}
	w.free <- sc
	if err != nil {
		w.errs[piece] = fmt.Errorf("Dists.Dist(%d, %d): %w", i, j, err)
		return
	}
	if w.entropies == nil {
		if s, ok := checkedPlogp(row, w.vocab, w.cfg.SumTol); ok {
			w.rows[t], w.negEnt[t] = row, s
			return
		}
	}
	if w.errs[piece] = checkDist(row, i, j, w.vocab, w.cfg.SumTol); w.errs[piece] != nil {
		return
	}
	w.rows[t] = row
	if w.entropies == nil {
		w.negEnt[t] = plogp(row)
		return
	}
	h, err := w.entropies.Entropy(i, j)
	if err != nil {
		w.errs[piece] = fmt.Errorf("Dists.Entropy(%d, %d): %w", i, j, err)
		return
	}
	// An entropy is ≥ 0, or a little below when a probability exceeds 1
	// within the tolerance on the sum (−p·log p ≥ −SumTol for p ≤ 1 +
	// SumTol, to first order); anything else is a bug in the source.
	if !tensor.IsFinite(h) {
		w.errs[piece] = tensor.Errorf(tensor.ErrNonFinite, "dists", tensor.At(i, j), "Entropy = %v", h)
		return
	}
	if h < -w.cfg.SumTol {
		w.errs[piece] = tensor.Errorf(tensor.ErrRange, "dists", tensor.At(i, j), "Entropy = %v is negative", h)
		return
	}
	w.negEnt[t] = -h
}

// slotPass computes the discrepancies (Eq. 11) of one slot of one group,
// piece k·nslots + s: the KL divergence of each member's distribution to
// the slot mean p̄_s over the responses that have a rank s, as
//
//	KL(p ‖ p̄) = Σ p log p − Σ p log p̄,
//
// with Σ p log p from the row pass and log p̄ taken once per slot, so a
// slot costs V logarithms however many members it has. The members' rows
// are those the row pass fetched: no distribution is fetched twice.
type slotPass[F tensor.Float] struct{ w *Weighter[F] }

func (p slotPass[F]) Run(piece int) {
	w := p.w
	k, s := piece/w.nslots, piece%w.nslots
	n := w.slot[len(w.in.Rewards)]
	sc := <-w.free
	defer func() { w.free <- sc }()
	sc.rows, sc.toks, sc.at = sc.rows[:0], sc.toks[:0], sc.at[:0]
	for i := range w.in.Rewards {
		if w.slot[i+1]-w.slot[i] <= s {
			continue
		}
		at := k*n + w.slot[i] + s
		t := w.toks[at]
		sc.rows, sc.toks, sc.at = append(sc.rows, w.rows[t]), append(sc.toks, t), append(sc.at, at)
	}
	if len(sc.rows) == 1 {
		w.d[sc.at[0]] = 0 // the only member is its own mean
		return
	}
	lm := sc.logMean
	clear(lm)
	for _, row := range sc.rows {
		addTo(lm, row)
	}
	// p̄_v = 0 only where every member has p_v = 0, and those terms are
	// 0·log 0 = 0: logMean writes 0 there.
	logMean(lm, len(sc.rows))
	for e, row := range sc.rows {
		w.d[sc.at[e]] = w.negEnt[sc.toks[e]] - dot(row, lm)
	}
}

// discrepancies runs the row and slot passes over the worker pool.
func (w *Weighter[F]) discrepancies() error {
	pieces := len(w.frames) * w.nslots
	if pieces == 0 {
		return nil
	}
	w.ensureScratch()
	tokens := w.start[len(w.in.Rewards)]
	w.negEnt = grow(w.negEnt, tokens)
	w.rows = grow(w.rows, tokens)
	w.errs = grow(w.errs, max(len(w.used), pieces))
	clear(w.errs)
	helpers := parallel.Workers() - 1
	parallel.Do(rowPass[F]{w}, len(w.used), helpers)
	err := firstError(w.errs[:len(w.used)])
	if err == nil {
		clear(w.errs[:pieces])
		parallel.Do(slotPass[F]{w}, pieces, helpers)
		err = firstError(w.errs[:pieces])
	}
	w.release()
	return err
}

// firstError returns the first non-nil error of errs, the one of the lowest
// piece, so that the error reported does not depend on the schedule.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// take returns a dst row of length V for Dist: the next of the rows kept
// from earlier calls, or a new one. A source that fills dst thus costs V
// floats of scratch per grouped token, which the Weighter keeps for the
// next call; a source that returns rows of its own, like Dense, uses one
// per worker.
func (w *Weighter[F]) take() []F {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nbufs == len(w.bufs) {
		w.bufs = append(w.bufs, nil)
	}
	b := grow(w.bufs[w.nbufs], w.vocab)
	w.bufs[w.nbufs] = b
	w.nbufs++
	return b
}

// release forgets the rows of this call, so that the Weighter keeps no
// source's memory alive.
func (w *Weighter[F]) release() {
	for _, t := range w.used {
		w.rows[t] = nil
	}
}

// ensureScratch sizes one scratch per worker for this call's G and V and
// puts them all in the free list.
func (w *Weighter[F]) ensureScratch() {
	workers, g := parallel.Workers(), len(w.in.Rewards)
	if len(w.scratch) != workers {
		w.scratch = make([]*scratch[F], workers)
		for k := range w.scratch {
			w.scratch[k] = new(scratch[F])
		}
		w.free = make(chan *scratch[F], workers)
	}
	for len(w.free) > 0 {
		<-w.free
	}
	for _, sc := range w.scratch {
		sc.logMean = grow(sc.logMean, w.vocab)
		sc.rows, sc.toks, sc.at = grow(sc.rows, g), grow(sc.toks, g), grow(sc.at, g)
		sc.spare = nil
		w.free <- sc
	}
	w.nbufs = 0
}

// weights min-max normalises each group's discrepancies and writes
// W = 1 + α·(mean of a token's normalised discrepancies) (Eq. 12), or 1
// for a token in no group.
func (w *Weighter[F]) weights(dst []F) {
	n := w.slot[len(w.in.Rewards)]
	w.acc = grow(w.acc, len(dst))
	for _, t := range w.used {
		w.acc[t] = 0
	}
	for k := range w.frames {
		ds, ts := w.d[k*n:(k+1)*n], w.toks[k*n:(k+1)*n]
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range ds {
			lo, hi = min(lo, x), max(hi, x)
		}
		spread := hi - lo
		if !(spread > flatSpread*max(1, math.Abs(lo), math.Abs(hi))) {
			continue // all equal: every normalised value is 0
		}
		for e, x := range ds {
			w.acc[ts[e]] += (x - lo) / spread
		}
	}
	for t := range dst {
		dst[t] = 1
	}
	for _, t := range w.used {
		dst[t] = F(1 + w.cfg.Alpha*w.acc[t]/float64(w.member[t]))
	}
}
