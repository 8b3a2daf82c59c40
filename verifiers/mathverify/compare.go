package mathverify

import (
	"math"
	"sort"
)

// comparer decides whether a gold tree and a pred tree denote the same
// answer. Its methods take the gold first: several rules are asymmetric.
type comparer struct {
	o   *Options
	ev  *evaluator
	bud *budget
	// seed draws the random points; it is a hash of the two texts
	// compared, so that the points are the same for the same input and
	// cannot be known before the answer is written.
	seed uint64
}

// Random evaluation: every variable gets numSamples values drawn from a
// hash of (seed, sample, variable position), the same on both sides: the
// first numInner in [0.35, 2.65], the others alternately in [0.05, 0.35]
// and [2.65, 4]; then the same values with negative and mixed signs
// (signedAgree); summation bounds get integers 2…6. The values are
// irrational for all practical purposes, so that a floor, a sign or a
// piecewise definition that matches the gold only at chosen points fails.
const (
	numSamples = 10
	numInner   = 6
	// numFar more points in [4, 1000], with both signs, probe a side
	// that holds a step function (floor, ceil, sgn, max, min): ⌊x/10⌋
	// is 0 on every point near 1.
	numFar = 6
)

// stepFunc reports a floor, ceil, sgn, max or min in n.
func stepFunc(n *node) bool {
	return n.has(func(x *node) bool {
		return x.k == kFunc && (x.name == "floor" || x.name == "ceil" || x.name == "sgn" || x.name == "max" || x.name == "min")
	})
}

// seedOf hashes the texts of the two sides (FNV-1a).
func seedOf(gold, pred string) uint64 {
	h := uint64(14695981039346656037)
	for _, s := range [2]string{gold, pred} {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
		h ^= 0xff
		h *= 1099511628211
	}
	return h
}

func (c *comparer) sampleValue(i, j int) float64 {
	x := c.seed + uint64(i+1)*0x9E3779B97F4A7C15 + uint64(j+1)*0xBF58476D1CE4E5B9
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	u := float64(x>>11) / float64(1<<53)
	switch {
	case i >= numSamples: // far points for step functions: 4…1000, log-uniform
		return 4 * math.Pow(250, u)
	case i < numInner:
		return 0.35 + 2.3*u
	case i%2 == 0:
		return 0.05 + 0.3*u
	default:
		return 2.65 + 1.35*u
	}
}

func allOps(r *node, op relOp) bool {
	for _, o := range r.ops {
		if o != op {
			return false
		}
	}
	return true
}

// orderRel reports whether r is built from <, ≤, >, ≥, ≠ only.
func orderRel(r *node) bool {
	for _, o := range r.ops {
		if !o.isOrder() && o != opNe {
			return false
		}
	}
	return true
}

func isMembership(r *node) bool { return len(r.ops) == 1 && r.ops[0] == opIn }

// nameLike reports whether n can be the left side of an assignment: a
// name (x, x_1, f(x), \zzz), a tuple of names, or a product, ratio or
// absolute value of names (AB, NO/BO, |AB|, V_1:V_2).
func nameLike(n *node) bool {
	switch n.k {
	case kSym, kUFunc:
		return true
	case kMul, kDiv, kTuple:
		for _, a := range n.args {
			if !nameLike(a) {
				return false
			}
		}
		return len(n.args) > 0
	case kFunc:
		return n.name == "abs" && nameLike(n.args[0])
	}
	return false
}

// isAssign reports whether r reads "name = value" (possibly a chain, as
// x = 5+5+1 = 11) or "name ∈ set".
func isAssign(r *node) bool {
	return r.k == kRel && nameLike(r.args[0]) && (allOps(r, opEq) || isMembership(r))
}

func last(r *node) *node { return r.args[len(r.args)-1] }

// equal is the entry point for any two trees.
func (c *comparer) equal(g, p *node) bool {
	if !c.bud.ok() {
		return false
	}
	gr, pr := g.k == kRel, p.k == kRel
	switch {
	case gr && pr:
		return c.relEqual(g, p)
	case gr:
		// A gold "x = 3" or "x = 5+5+1 = 11" is answered by "3" or "11";
		// "1+1 = 2" is not a gold anyone writes, so it stays an equation
		// unless it is a chain, whose last side is the result.
		if isAssign(g) || allOps(g, opEq) && len(g.args) >= 3 {
			return c.equal(last(g), p)
		}
		if orderRel(g) && p.isSetLike() {
			return c.relSet(g, p, nil)
		}
		return false
	case pr:
		// A pred equation answers a gold value with its last side.
		if allOps(p, opEq) || isMembership(p) {
			return c.equal(g, last(p))
		}
		// An inequality answers an interval gold as the set it defines
		// (x > 2 is (2, ∞)); other set golds need AllowSetRelationComp.
		if orderRel(p) && g.isSetLike() && (c.o.AllowSetRelationComp || isIntervalKind(g) || infiniteEnd(g)) {
			return c.relSet(p, g, nil)
		}
		return false
	}
	if u, ok := c.relUnion(p); ok && (isIntervalKind(g) || infiniteEnd(g)) {
		return c.piecesEqual(g, u)
	}
	if u, ok := c.relUnion(g); ok && (isIntervalKind(p) || infiniteEnd(p)) {
		return c.piecesEqual(u, p)
	}
	return c.valueEqual(g, p)
}

// relUnion reads a list of inequalities in one variable, "x < 0 or x >
// 1", as the union of the sets they define.
func (c *comparer) relUnion(n *node) (*node, bool) {
	if n.k != kSet || len(n.args) < 2 {
		return nil, false
	}
	var subject string
	u := &node{k: kUnion}
	for _, a := range n.args {
		if a.k != kRel || !orderRel(a) {
			return nil, false
		}
		subj, set, ok := c.relToSet(a)
		if !ok || subject != "" && subj.String() != subject {
			return nil, false
		}
		subject = subj.String()
		u.args = append(u.args, set)
	}
	return u, true
}

// infiniteEnd reports a pair with an infinite end, (2, ∞), which can
// only be an interval.
func infiniteEnd(n *node) bool {
	return n.k == kTuple && len(n.args) == 2 && (infSign(n.args[0]) != 0 || infSign(n.args[1]) != 0)
}

func isIntervalKind(n *node) bool {
	switch n.k {
	case kInterval, kUnion, kInter, kSetMinus:
		return true
	}
	return false
}

func (c *comparer) valueEqual(g, p *node) bool {
	// [[1, 2], [3, 4]] writes a matrix as its rows.
	if g.k == kMatrix {
		if m := rowsMatrix(p); m != nil {
			p = m
		}
	} else if p.k == kMatrix {
		if m := rowsMatrix(g); m != nil {
			g = m
		}
	}
	switch {
	case g.k == kText || p.k == kText:
		return textEqual(g, p)
	case g.k == kSet || p.k == kSet:
		return c.setEqual(g, p)
	case isIntervalKind(g) || isIntervalKind(p):
		return g.isSetLike() && p.isSetLike() && c.piecesEqual(g, p)
	case g.k == kTuple || p.k == kTuple:
		return c.tupleEqual(g, p)
	}
	if gm, ok := c.matrixOf(g); ok {
		pm, ok := c.matrixOf(p)
		return ok && c.matricesEqual(gm, pm)
	}
	if _, ok := c.matrixOf(p); ok {
		return false
	}
	return c.scalarEqual(g, p)
}

// setEqual compares finite sets, and a set with a lone value, a tuple or
// an interval.
func (c *comparer) setEqual(g, p *node) bool {
	if g.k == kTuple && assignList(p) || p.k == kTuple && assignList(g) {
		return c.assignTupleEqual(g, p)
	}
	switch {
	case g.k == kSet && p.k == kSet:
		return c.matchSets(g.args, p.args)
	case g.k == kSet:
		switch {
		case len(g.args) == 1:
			return c.equal(g.args[0], p)
		case p.k == kTuple && !p.pair || p.k == kTuple && len(g.args) == 2:
			return c.sortedEqual(g.args, p.args, true)
		case p.isSetLike():
			return c.piecesEqual(g, p)
		}
	case p.k == kSet:
		switch {
		case len(p.args) == 1:
			return c.equal(g, p.args[0])
		case g.k == kTuple:
			return c.sortedEqual(p.args, g.args, false)
		case g.isSetLike():
			return c.piecesEqual(g, p)
		}
	}
	return false
}

// assignList reports whether n lists values of distinct names:
// x = 3, y = −2.
func assignList(n *node) bool {
	if n.k != kSet || len(n.args) < 2 {
		return false
	}
	seen := map[string]bool{}
	for _, a := range n.args {
		if a.k != kRel || len(a.args) != 2 || a.ops[0] != opEq || !nameLike(a.args[0]) {
			return false
		}
		name := a.args[0].String()
		if seen[name] {
			return false
		}
		seen[name] = true
	}
	return true
}

// assignTupleEqual compares a tuple with a list of assignments, in the
// written order or else in the order of the names: (3, −2) is
// x = 3, y = −2.
func (c *comparer) assignTupleEqual(g, p *node) bool {
	t, list := g, p
	if p.k == kTuple {
		t, list = p, g
	}
	if len(t.args) != len(list.args) {
		return false
	}
	vals := make([]*node, len(list.args))
	for i, a := range list.args {
		vals[i] = a.args[1]
	}
	try := func() bool {
		for i := range t.args {
			a, b := t.args[i], vals[i]
			if t == p {
				a, b = b, a
			}
			if !c.equal(a, b) {
				return false
			}
		}
		return true
	}
	if try() {
		return true
	}
	idx := make([]int, len(list.args))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return list.args[idx[a]].args[0].String() < list.args[idx[b]].args[0].String() })
	for i, j := range idx {
		vals[i] = list.args[j].args[1]
	}
	return try()
}

// matchSets pairs every gold element with a distinct equal pred element.
// Duplicates count once.
func (c *comparer) matchSets(gs, ps []*node) bool {
	if len(gs) == len(ps) && c.greedyMatch(gs, ps) {
		return true
	}
	gd, pd := c.dedupe(gs), c.dedupe(ps)
	if len(gd) != len(pd) || len(gd) == len(gs) && len(pd) == len(ps) {
		return false
	}
	return c.greedyMatch(gd, pd)
}

func (c *comparer) greedyMatch(gs, ps []*node) bool {
	used := make([]bool, len(ps))
	for _, a := range gs {
		found := false
		for j, b := range ps {
			if !used[j] && c.equal(a, b) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (c *comparer) dedupe(xs []*node) []*node {
	out := make([]*node, 0, len(xs))
	for _, x := range xs {
		dup := false
		for _, y := range out {
			if c.equal(y, x) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, x)
		}
	}
	return out
}

// sortedEqual compares a set with a tuple written in increasing order: a
// list of solutions is often written (1, 3) for {1, 3}, but (3, 1) is an
// ordered pair.
func (c *comparer) sortedEqual(set, tuple []*node, setIsGold bool) bool {
	if len(set) != len(tuple) {
		return false
	}
	vals := make([]float64, len(set))
	idx := make([]int, len(set))
	for i, e := range set {
		v, ok := c.ev.realValue(e)
		if !ok {
			return false
		}
		vals[i], idx[i] = v, i
	}
	sort.SliceStable(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
	for i, j := range idx {
		if setIsGold && !c.equal(set[j], tuple[i]) || !setIsGold && !c.equal(tuple[i], set[j]) {
			return false
		}
	}
	return true
}

func (c *comparer) tupleEqual(g, p *node) bool {
	if g.k == kTuple && p.k == kTuple {
		if len(g.args) != len(p.args) {
			return false
		}
		for i := range g.args {
			if !c.equal(g.args[i], p.args[i]) {
				return false
			}
		}
		return true
	}
	// A tuple and a column or row vector.
	t, other, tupleIsGold := g, p, true
	if p.k == kTuple {
		t, other, tupleIsGold = p, g, false
	}
	m, ok := c.matrixOf(other)
	if !ok || m.rows != 1 && m.cols != 1 || len(m.cells) != len(t.args) {
		return false
	}
	for i := range t.args {
		if tupleIsGold && !c.equal(t.args[i], m.cells[i]) || !tupleIsGold && !c.equal(m.cells[i], t.args[i]) {
			return false
		}
	}
	return true
}
