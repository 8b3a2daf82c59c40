package mathverify

import (
	"math"
	"sort"
)

// Intervals, unions and finite sets as sorted, merged pieces of the line.

// piece is one interval (or point) of a set of reals.
type piece struct {
	lo, hi       *node
	lv, hv       float64
	lopen, ropen bool
	numeric      bool
}

func (c *comparer) pieces(n *node) ([]piece, bool) {
	mk := func(lo, hi *node, lopen, ropen bool) piece {
		p := piece{lo: lo, hi: hi, lopen: lopen, ropen: ropen}
		var ok1, ok2 bool
		p.lv, ok1 = c.ev.realValue(lo)
		p.hv, ok2 = c.ev.realValue(hi)
		p.numeric = ok1 && ok2
		return p
	}
	switch n.k {
	case kInterval:
		return []piece{mk(n.args[0], n.args[1], n.lopen, n.ropen)}, true
	case kTuple:
		if n.pair {
			return []piece{mk(n.args[0], n.args[1], true, true)}, true
		}
	case kSet:
		out := make([]piece, 0, len(n.args))
		for _, a := range n.args {
			if !scalarKind(a) {
				return nil, false
			}
			out = append(out, mk(a, a, false, false))
		}
		return out, true
	case kUnion:
		var out []piece
		for _, a := range n.args {
			ps, ok := c.pieces(a)
			if !ok {
				return nil, false
			}
			out = append(out, ps...)
		}
		return out, true
	}
	return nil, false
}

func nearlyEq(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// canon sorts numeric pieces and merges those that overlap or touch.
func canon(ps []piece) []piece {
	for _, p := range ps {
		if !p.numeric {
			return ps
		}
	}
	sorted := make([]piece, 0, len(ps))
	for _, p := range ps {
		if p.lv > p.hv && !nearlyEq(p.lv, p.hv) || nearlyEq(p.lv, p.hv) && (p.lopen || p.ropen) {
			continue // empty
		}
		sorted = append(sorted, p)
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		if !nearlyEq(sorted[i].lv, sorted[j].lv) {
			return sorted[i].lv < sorted[j].lv
		}
		return !sorted[i].lopen && sorted[j].lopen
	})
	var out []piece
	for _, q := range sorted {
		if n := len(out); n > 0 {
			l := &out[n-1]
			touch := nearlyEq(q.lv, l.hv)
			if q.lv < l.hv && !touch || touch && (!l.ropen || !q.lopen) {
				if q.hv > l.hv && !nearlyEq(q.hv, l.hv) || nearlyEq(q.hv, l.hv) && !q.ropen {
					l.hi, l.hv, l.ropen = q.hi, q.hv, q.ropen
				}
				continue
			}
		}
		out = append(out, q)
	}
	return out
}

func (c *comparer) piecesEqual(g, p *node) bool {
	gp, ok1 := c.pieces(g)
	pp, ok2 := c.pieces(p)
	if !ok1 || !ok2 {
		return false
	}
	gp, pp = canon(gp), canon(pp)
	if len(gp) != len(pp) {
		return false
	}
	for i := range gp {
		a, b := gp[i], pp[i]
		if a.lopen != b.lopen || a.ropen != b.ropen || !c.numEqual(a.lo, b.lo) || !c.numEqual(a.hi, b.hi) {
			return false
		}
	}
	return true
}

// member reports whether v lies in the set n.
func (c *comparer) member(n *node, v float64) (bool, bool) {
	ps, ok := c.pieces(n)
	if !ok {
		return false, false
	}
	for _, p := range ps {
		if !p.numeric {
			return false, false
		}
		tol := 1e-9 * math.Max(1, math.Abs(v))
		above := v > p.lv+tol || !p.lopen && v >= p.lv-tol
		below := v < p.hv-tol || !p.ropen && v <= p.hv+tol
		if above && below {
			return true, true
		}
	}
	return false, true
}
