package mathverify

import (
	"math"
	"math/big"
	"math/cmplx"
	"sort"
	"strings"
	"unicode"
)

// comparer decides whether a gold tree and a pred tree denote the same
// answer. Its methods take the gold first: several rules are asymmetric.
type comparer struct {
	o   *Options
	ev  *evaluator
	bud *budget
}

// Random evaluation: every variable gets numSamples values in
// [0.35, 2.65] from a fixed hash of (sample, variable position), the same
// on both sides, then the same values with negative and mixed signs
// (signedAgree); summation bounds get integers 2…6.
const numSamples = 6

func sampleValue(i, j int) float64 {
	x := uint64(i+1)*0x9E3779B97F4A7C15 + uint64(j+1)*0xBF58476D1CE4E5B9
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return 0.35 + 2.3*float64(x>>11)/float64(1<<53)
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

// maxMatrixWork bounds the multiply-adds of one matrix product.
const maxMatrixWork = 4096

// matrix is a matrix value with symbolic cells.
type matrix struct {
	rows, cols int
	cells      []*node
}

// matrixOf evaluates sums, products and scalar multiples of matrices
// cell by cell.
func (c *comparer) matrixOf(n *node) (matrix, bool) {
	switch n.k {
	case kMatrix:
		return matrix{len(n.args) / n.cols, n.cols, n.args}, true
	case kNeg:
		m, ok := c.matrixOf(n.args[0])
		if !ok {
			return m, false
		}
		out := matrix{m.rows, m.cols, make([]*node, len(m.cells))}
		for i, x := range m.cells {
			out.cells[i] = neg(x)
		}
		return out, true
	case kAdd:
		var acc matrix
		for i, a := range n.args {
			m, ok := c.matrixOf(a)
			if !ok || i > 0 && (m.rows != acc.rows || m.cols != acc.cols) {
				return matrix{}, false
			}
			if i == 0 {
				acc = m
				continue
			}
			sum := matrix{m.rows, m.cols, make([]*node, len(m.cells))}
			for j := range m.cells {
				sum.cells[j] = bin(kAdd, acc.cells[j], m.cells[j])
			}
			acc = sum
		}
		return acc, len(n.args) > 0
	case kMul:
		var acc matrix
		var scale *node
		have := false
		for _, a := range n.args {
			m, ok := c.matrixOf(a)
			switch {
			case !ok && !a.has(func(x *node) bool { return x.k == kMatrix }):
				if scale == nil {
					scale = a
				} else {
					scale = bin(kMul, scale, a)
				}
			case !ok:
				return matrix{}, false
			case !have:
				acc, have = m, true
			default:
				if acc.cols != m.rows || acc.rows*m.cols*acc.cols > maxMatrixWork {
					return matrix{}, false
				}
				prod := matrix{acc.rows, m.cols, make([]*node, acc.rows*m.cols)}
				for i := 0; i < acc.rows; i++ {
					for j := 0; j < m.cols; j++ {
						var s *node
						for k := 0; k < acc.cols; k++ {
							t := bin(kMul, acc.cells[i*acc.cols+k], m.cells[k*m.cols+j])
							if s == nil {
								s = t
							} else {
								s = bin(kAdd, s, t)
							}
						}
						prod.cells[i*m.cols+j] = s
					}
				}
				acc = prod
			}
		}
		if !have {
			return matrix{}, false
		}
		if scale != nil {
			out := matrix{acc.rows, acc.cols, make([]*node, len(acc.cells))}
			for i, x := range acc.cells {
				out.cells[i] = bin(kMul, scale, x)
			}
			acc = out
		}
		return acc, true
	}
	return matrix{}, false
}

func (c *comparer) matricesEqual(g, p matrix) bool {
	if g.rows != p.rows || g.cols != p.cols {
		return false
	}
	for i := range g.cells {
		if !c.equal(g.cells[i], p.cells[i]) {
			return false
		}
	}
	return true
}

// alternates lists the values a marked number may stand for: 50% is 0.5
// or 50; 90° is 90 or π/2; 204_5 is 54 or, read carelessly, 204.
func alternates(n *node) []*node {
	switch n.k {
	case kPercent:
		return []*node{n, n.args[0]}
	case kDegree:
		return []*node{n, bin(kMul, n.args[0], bin(kDiv, cnst("pi"), intNode(180)))}
	case kBase:
		if r, ok := new(big.Rat).SetString(n.name); ok {
			return []*node{n, num(r)}
		}
	}
	return []*node{n}
}

func (c *comparer) scalarEqual(g, p *node) bool {
	ga, pa := alternates(g), alternates(p)
	for _, a := range ga {
		for _, b := range pa {
			if c.numEqual(a, b) {
				return true
			}
		}
	}
	return false
}

// infSign is +1 for ∞, −1 for −∞, else 0.
func infSign(n *node) int {
	switch {
	case n.k == kConst && n.name == "inf":
		return 1
	case n.k == kNeg && n.args[0].k == kConst && n.args[0].name == "inf":
		return -1
	}
	return 0
}

// numEqual compares two scalar expressions: exactly when both are
// rational, at Options.Precision when a decimal is involved, with a
// relative tolerance for other constants, and at random points when
// there are variables.
func (c *comparer) numEqual(a, b *node) bool {
	if sa, sb := infSign(a), infSign(b); sa != 0 || sb != 0 {
		return sa == sb
	}
	approx := a.hasApprox() || b.hasApprox()
	if ra, ok := c.ev.exact(a); ok {
		if rb, ok := c.ev.exact(b); ok {
			if ra.Cmp(rb) == 0 {
				return true
			}
			if !approx {
				return false
			}
			fa, _ := ra.Float64()
			fb, _ := rb.Float64()
			return c.closePrec(fa, fb)
		}
	}
	v := freeVars(a, b)
	if len(v.names) == 0 {
		za, ok1 := c.ev.eval(a, nil)
		zb, ok2 := c.ev.eval(b, nil)
		if !ok1 || !ok2 {
			return false
		}
		if approx {
			return c.closePrec(real(za), real(zb)) && c.closePrec(imag(za), imag(zb))
		}
		if !closeRel(za, zb) {
			return false
		}
		if eq, ok := c.preciseEqual(a, b); ok {
			return eq
		}
		return true
	}
	return c.randomEqual(a, b, v, approx)
}

// relTol is the relative tolerance of constants and of random probes
// compared in float64, where neither side is exact and no decimal sets a
// precision: loose enough for rounding in identities (√2·√3 = √6, sin²
// + cos² = 1), far too tight for visibly different closed forms (π and
// 355/113 differ by 8·10^−8). Σ and Π beyond float64 go to preciseEqual.
const relTol = 1e-11

func closeRel(a, b complex128) bool {
	d := cmplx.Abs(a - b)
	return d <= relTol*math.Max(cmplx.Abs(a), cmplx.Abs(b)) || d <= 1e-12
}

// closePrec: a and b agree to Options.Precision decimal places; below 0.1
// the places count from the first significant decade, so that 1e-7 and
// 2e-7 differ.
func (c *comparer) closePrec(a, b float64) bool {
	m := math.Max(math.Abs(a), math.Abs(b))
	scale := 1.0
	if m > 0 && m < 0.1 {
		scale = math.Pow(10, math.Floor(math.Log10(m))+1)
	}
	tol := 0.5 * math.Pow(10, -float64(c.o.Precision)) * scale
	return math.Abs(a-b) <= tol*(1+1e-9)+1e-12*m
}

func (c *comparer) randomEqual(a, b *node, v vars, approx bool) bool {
	e := &env{names: v.names, vals: make([]complex128, len(v.names))}
	valid := 0
	for i := 0; i < numSamples; i++ {
		c.bind(e, v, i)
		za, ok1 := c.ev.eval(a, e)
		zb, ok2 := c.ev.eval(b, e)
		if !ok1 || !ok2 {
			continue
		}
		d := cmplx.Abs(za - zb)
		m := math.Max(cmplx.Abs(za), cmplx.Abs(zb))
		if approx {
			if d > 0.5*math.Pow(10, -float64(c.o.Precision))*math.Max(1, m) {
				return false
			}
		} else if d > relTol*m && d > 1e-11 {
			return false
		}
		valid++
	}
	if valid < 3 {
		return false
	}
	return c.signedAgree(a, b, e, v, approx)
}

// signedAgree probes a and b again at points where the variables take
// negative and mixed signs, so that |x|, √(x²) and x, which agree on
// positive numbers, stay distinct. Only points where both sides are real
// count: principal branches of roots and logarithms of negative numbers
// differ between equivalent real forms (x^{1/3} and ∛x).
func (c *comparer) signedAgree(a, b *node, e *env, v vars, approx bool) bool {
	for i := 0; i < numSamples; i++ {
		c.bind(e, v, i)
		for j, name := range v.names {
			if !v.ints[name] && (i+j)%2 == 0 {
				e.vals[j] = -e.vals[j]
			}
		}
		za, ok1 := c.ev.eval(a, e)
		zb, ok2 := c.ev.eval(b, e)
		if !ok1 || !ok2 || !realValue(za) || !realValue(zb) {
			continue
		}
		d := math.Abs(real(za) - real(zb))
		m := math.Max(math.Abs(real(za)), math.Abs(real(zb)))
		if approx {
			if d > 0.5*math.Pow(10, -float64(c.o.Precision))*math.Max(1, m) {
				return false
			}
		} else if d > relTol*m && d > 1e-11 {
			return false
		}
	}
	return true
}

func realValue(z complex128) bool {
	return !cmplx.IsNaN(z) && !cmplx.IsInf(z) && math.Abs(imag(z)) <= 1e-12*math.Max(1, math.Abs(real(z)))
}

func (c *comparer) bind(e *env, v vars, i int) {
	for j, name := range v.names {
		if v.ints[name] {
			e.vals[j] = complex(float64(2+(i+2*j)%5), 0)
		} else {
			e.vals[j] = complex(sampleValue(i, j), 0)
		}
	}
}

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
		return c.piecesEqual(t, set)
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
