package appo

import (
	"fmt"
	"math"

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
	w.rowOf = grow(w.rowOf, tokens)
	for i := range g {
		for t := w.start[i]; t < w.start[i+1]; t++ {
			if w.member[t] > 0 {
				w.rowOf[t] = len(w.used)
				w.used = append(w.used, t)
				w.usedBy = append(w.usedBy, i)
			}
		}
	}
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
