package mathverify

import (
	"math"
	"math/cmplx"
	"sort"
	"strings"
	"unicode"
)

// Text answers, equations and inequalities.

// wordForm spells a text answer or a product of letters in lower case
// without punctuation: \text{(C)} → "c", Even → "even".
func wordForm(n *node) (string, bool) {
	switch n.k {
	case kText:
		return normWord(n.name), true
	case kSym:
		for _, r := range n.name {
			if !unicode.IsLetter(r) {
				return "", false
			}
		}
		return strings.ToLower(n.name), true
	case kConst:
		if n.name == "e" || n.name == "i" {
			return n.name, true
		}
	case kMul:
		var b strings.Builder
		for _, a := range n.args {
			w, ok := wordForm(a)
			if !ok {
				return "", false
			}
			b.WriteString(w)
		}
		return b.String(), true
	}
	return "", false
}

func normWord(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func textEqual(g, p *node) bool {
	wg, ok1 := wordForm(g)
	wp, ok2 := wordForm(p)
	return ok1 && ok2 && wg != "" && wg == wp
}

// relEqual compares two relations.
func (c *comparer) relEqual(g, p *node) bool {
	gEq, pEq := allOps(g, opEq), allOps(p, opEq)
	gIn, pIn := isMembership(g), isMembership(p)
	switch {
	case (gEq || gIn) && (pEq || pIn):
		if isAssign(g) && isAssign(p) && g.args[0].String() == p.args[0].String() {
			return c.equal(last(g), last(p))
		}
		if gIn || pIn {
			return false
		}
		return c.equationEqual(g.args[0], last(g), p.args[0], last(p))
	case gIn && orderRel(p):
		return c.o.AllowSetRelationComp && c.relSet(p, g.args[1], g.args[0])
	case pIn && orderRel(g):
		return c.relSet(g, p.args[1], p.args[0])
	case orderRel(g) && orderRel(p):
		return c.orderEqual(g, p)
	}
	return false
}

func scalarKind(n *node) bool {
	switch n.k {
	case kSet, kTuple, kInterval, kUnion, kInter, kSetMinus, kMatrix, kText, kRel:
		return false
	}
	return !n.has(func(x *node) bool { return x.k == kMatrix || x.k == kPM })
}

// equationEqual: l₁ = r₁ and l₂ = r₂ have the same solutions when
// l₁ − r₁ = k·(l₂ − r₂) for a constant k ≠ 0 (2x+4y−3 = 0 and
// y = −x/2 + 3/4).
func (c *comparer) equationEqual(gl, gr, pl, pr *node) bool {
	if scalarKind(gl) && scalarKind(gr) && scalarKind(pl) && scalarKind(pr) {
		return c.proportional(bin(kAdd, gl, neg(gr)), bin(kAdd, pl, neg(pr)), false)
	}
	return c.equal(gl, pl) && c.equal(gr, pr) || c.equal(gl, pr) && c.equal(gr, pl)
}

// proportional reports whether d1 = k·d2 for a constant k ≠ 0 (k > 0 when
// positive is set), checked at the random points.
func (c *comparer) proportional(d1, d2 *node, positive bool) bool {
	v := freeVars(d1, d2)
	e := &env{names: v.names, vals: make([]complex128, len(v.names))}
	var k complex128
	haveK, valid := false, 0
	for i := 0; i < numSamples; i++ {
		if len(v.names) == 0 && i > 0 {
			break
		}
		c.bind(e, v, i)
		z1, ok1 := c.ev.eval(d1, e)
		z2, ok2 := c.ev.eval(d2, e)
		if !ok1 || !ok2 {
			continue
		}
		zero1, zero2 := cmplx.Abs(z1) <= 1e-10, cmplx.Abs(z2) <= 1e-10
		if zero1 != zero2 {
			return false
		}
		valid++
		if zero1 {
			continue
		}
		r := z1 / z2
		if !haveK {
			k, haveK = r, true
			if positive && (real(k) <= 0 || !isReal(k)) {
				return false
			}
			continue
		}
		if cmplx.Abs(r-k) > 1e-7*cmplx.Abs(k) {
			return false
		}
	}
	if len(v.names) == 0 {
		return valid == 1 && !haveK // both sides hold, as 1 + 1 = 2 and 4 = 4
	}
	return valid >= 3
}

// orderEqual compares inequalities.
func (c *comparer) orderEqual(g, p *node) bool {
	if len(g.args) == len(p.args) {
		same, rev := true, true
		n := len(g.args)
		for i := range g.ops {
			same = same && g.ops[i] == p.ops[i]
			rev = rev && g.ops[i] == p.ops[n-2-i].flip()
		}
		if same {
			for i := range g.args {
				if same = c.equal(g.args[i], p.args[i]); !same {
					break
				}
			}
			if same {
				return true
			}
		}
		if rev {
			for i := range g.args {
				if rev = c.equal(g.args[i], p.args[n-1-i]); !rev {
					break
				}
			}
			if rev {
				return true
			}
		}
	}
	v := freeVars(g, p)
	if len(v.names) == 1 {
		pts := c.testPoints([]*node{g, p}, nil)
		for _, x := range pts {
			if c.holds(g, v.names[0], x) != c.holds(p, v.names[0], x) {
				return false
			}
		}
		return len(pts) > 0
	}
	if len(g.args) == 2 && len(p.args) == 2 {
		d1, op1 := normIneq(g)
		d2, op2 := normIneq(p)
		return op1 == op2 && c.proportional(d1, d2, op1 != opNe)
	}
	return false
}

// normIneq writes a two-sided inequality as d < 0, d ≤ 0 or d ≠ 0.
func normIneq(r *node) (*node, relOp) {
	l, rr := r.args[0], r.args[1]
	switch r.ops[0] {
	case opGt:
		return bin(kAdd, rr, neg(l)), opLt
	case opGe:
		return bin(kAdd, rr, neg(l)), opLe
	}
	return bin(kAdd, l, neg(rr)), r.ops[0]
}

// relSet compares a relation with a set of values: −2 ≤ x ≤ 7 with
// [−2, 7] or with x ∈ [−2, 7]; subject is the x of "x ∈ S", nil for a
// bare set.
func (c *comparer) relSet(rel, set, subject *node) bool {
	if subj, t, ok := c.relToSet(rel); ok && (subject == nil || subj.String() == subject.String()) {
		// |x| > 1 is not (1, ∞): a condition on an expression of the one
		// variable is compared by its truth below.
		if c.piecesEqual(t, set) || subj.k == kSym || subject != nil || len(freeVars(rel).names) != 1 {
			return c.piecesEqual(t, set)
		}
	}
	v := freeVars(rel)
	if len(v.names) != 1 || subject != nil && (subject.k != kSym || subject.name != v.names[0]) {
		return false
	}
	pts := c.testPoints([]*node{rel}, set)
	for _, x := range pts {
		in, ok := c.member(set, x)
		if !ok || c.holds(rel, v.names[0], x) != in {
			return false
		}
	}
	return len(pts) > 0
}

func (c *comparer) isConst(n *node) bool {
	if len(freeVars(n).names) != 0 {
		return false
	}
	_, ok := c.ev.realValue(n)
	return ok
}

// relToSet turns a relation between an expression and constants into the
// expression and its interval: 0 < f(x) < 1 → f(x), (0, 1).
func (c *comparer) relToSet(r *node) (*node, *node, bool) {
	inf := cnst("inf")
	interval := func(lo, hi *node, lopen, ropen bool) *node {
		return &node{k: kInterval, args: []*node{lo, hi}, lopen: lopen, ropen: ropen}
	}
	switch len(r.args) {
	case 2:
		a, b, op := r.args[0], r.args[1], r.ops[0]
		switch {
		case c.isConst(b) && !c.isConst(a):
		case c.isConst(a) && !c.isConst(b):
			a, b, op = b, a, op.flip()
		default:
			return nil, nil, false
		}
		switch op {
		case opLt, opLe:
			return a, interval(neg(inf), b, true, op == opLt), true
		case opGt, opGe:
			return a, interval(b, inf, op == opGt, true), true
		case opNe:
			return a, &node{k: kUnion, args: []*node{interval(neg(inf), b, true, true), interval(b, inf, true, true)}}, true
		case opEq:
			return a, &node{k: kSet, args: []*node{b}}, true
		}
	case 3:
		lo, e, hi := r.args[0], r.args[1], r.args[2]
		if !c.isConst(lo) || !c.isConst(hi) || c.isConst(e) {
			return nil, nil, false
		}
		o1, o2 := r.ops[0], r.ops[1]
		switch {
		case (o1 == opLt || o1 == opLe) && (o2 == opLt || o2 == opLe):
			return e, interval(lo, hi, o1 == opLt, o2 == opLt), true
		case (o1 == opGt || o1 == opGe) && (o2 == opGt || o2 == opGe):
			return e, interval(hi, lo, o2 == opGt, o1 == opGt), true
		}
	}
	return nil, nil, false
}

// holds evaluates relation r with variable x set to v.
func (c *comparer) holds(r *node, x string, v float64) bool {
	e := &env{names: []string{x}, vals: []complex128{complex(v, 0)}}
	for i, op := range r.ops {
		a, ok := c.ev.eval(r.args[i], e)
		if !ok || !isReal(a) {
			return false
		}
		if op == opIn {
			in, ok := c.member(r.args[i+1], real(a))
			if !ok || !in {
				return false
			}
			continue
		}
		b, ok := c.ev.eval(r.args[i+1], e)
		if !ok || !isReal(b) {
			return false
		}
		av, bv := real(a), real(b)
		tol := 1e-9 * math.Max(1, math.Max(math.Abs(av), math.Abs(bv)))
		var t bool
		switch op {
		case opEq:
			t = math.Abs(av-bv) <= tol
		case opNe:
			t = math.Abs(av-bv) > tol
		case opLt:
			t = av < bv-tol
		case opLe:
			t = av <= bv+tol
		case opGt:
			t = av > bv+tol
		case opGe:
			t = av >= bv-tol
		}
		if !t {
			return false
		}
	}
	return true
}

// testPoints are where two one-variable conditions are compared: every
// constant in them and in the set (and its negative), a little to each
// side, midway between neighbours, and beyond the extremes.
func (c *comparer) testPoints(rels []*node, set *node) []float64 {
	var cs []float64
	add := func(v float64) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) && len(cs) < 64 {
			cs = append(cs, v, -v)
		}
	}
	add(0)
	for _, r := range rels {
		r.walk(func(n *node) bool {
			if n.k == kNum {
				f, _ := n.rat.Float64()
				add(f)
			}
			return true
		})
	}
	if set != nil {
		if ps, ok := c.pieces(set); ok {
			for _, p := range ps {
				add(p.lv)
				add(p.hv)
			}
		}
	}
	sort.Float64s(cs)
	uniq := cs[:0]
	for i, v := range cs {
		if i == 0 || v != uniq[len(uniq)-1] {
			uniq = append(uniq, v)
		}
	}
	pts := make([]float64, 0, 4*len(uniq)+6)
	for i, v := range uniq {
		d := 1e-6 * math.Max(1, math.Abs(v))
		pts = append(pts, v, v-d, v+d)
		if i+1 < len(uniq) {
			pts = append(pts, (v+uniq[i+1])/2)
		}
	}
	lo, hi := uniq[0], uniq[len(uniq)-1]
	pts = append(pts, lo-1, lo-10, lo-1000, hi+1, hi+10, hi+1000)
	return pts
}
