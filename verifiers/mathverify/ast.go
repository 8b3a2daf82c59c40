package mathverify

import (
	"math/big"
	"strconv"
	"strings"
)

// kind tags a node of the expression tree.
type kind uint8

const (
	kNum      kind = iota // rat; approx when written with a decimal point
	kSym                  // a variable: name
	kConst                // name: "pi", "e", "i", "inf"
	kAdd                  // args summed (subtraction is kNeg inside)
	kMul                  // args multiplied
	kDiv                  // args[0] / args[1]; name "ratio" for a:b
	kNeg                  // −args[0]
	kPow                  // args[0] ^ args[1]
	kFunc                 // a known function: name, args
	kUFunc                // an unknown function or indexed symbol: f(x), x_{n}
	kFact                 // args[0]!
	kPM                   // args[0] ± args[1]; args[0] nil for a leading ±; name "mp" for ∓
	kPercent              // args[0] %: value args[0]/100
	kDegree               // args[0] °: value args[0]
	kBase                 // name = digits, rat = value, base in cols
	kSum                  // Σ_{name=args[0]}^{args[1]} args[2]
	kProd                 // Π likewise
	kText                 // name = text
	kRel                  // args[0] ops[0] args[1] ops[1] …
	kTuple                // args; pair when written (a, b), which may be an open interval
	kInterval             // args[0], args[1]; lopen, ropen
	kSet                  // args
	kUnion                // args
	kInter                // args
	kSetMinus             // args[0] \ args[1]
	kMatrix               // args row-major; cols columns
)

// relOp is a relation symbol.
type relOp uint8

const (
	opEq relOp = iota
	opLt
	opLe
	opGt
	opGe
	opNe
	opIn
)

var relNames = [...]string{"=", "<", "<=", ">", ">=", "!=", "in"}

// flip returns the operator with its sides exchanged: a < b ⇔ b > a.
func (op relOp) flip() relOp {
	switch op {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return op
}

func (op relOp) isOrder() bool { return op >= opLt && op <= opGe }

// node is one vertex of a parsed answer. A single struct with a tag keeps the
// walkers (free variables, rendering, evaluation) short.
type node struct {
	k      kind
	name   string
	args   []*node
	ops    []relOp
	rat    *big.Rat
	approx bool
	lopen  bool
	ropen  bool
	pair   bool
	cols   int
}

func num(r *big.Rat) *node             { return &node{k: kNum, rat: r} }
func intNode(v int64) *node            { return num(new(big.Rat).SetInt64(v)) }
func sym(name string) *node            { return &node{k: kSym, name: name} }
func cnst(name string) *node           { return &node{k: kConst, name: name} }
func neg(a *node) *node                { return &node{k: kNeg, args: []*node{a}} }
func fn(name string, a ...*node) *node { return &node{k: kFunc, name: name, args: a} }

func bin(k kind, a, b *node) *node {
	// Flatten sums and products so that rendering and word forms see the
	// operands in written order.
	if k == kAdd || k == kMul {
		args := make([]*node, 0, 2)
		for _, x := range [2]*node{a, b} {
			if x.k == k {
				args = append(args, x.args...)
			} else {
				args = append(args, x)
			}
		}
		return &node{k: k, args: args}
	}
	return &node{k: k, args: []*node{a, b}}
}

// isSetLike reports whether n denotes a set of reals in interval notation.
func (n *node) isSetLike() bool {
	switch n.k {
	case kInterval, kUnion, kInter, kSetMinus:
		return true
	case kTuple:
		return n.pair
	case kSet:
		return true
	}
	return false
}

// String renders n canonically for logs: the tree as parsed, in a
// Python-like notation close to Math-Verify's sympy output.
func (n *node) String() string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	n.render(&b, 0)
	return b.String()
}

// Binding strengths for parenthesisation.
const (
	pLowest = iota
	pRel
	pSet
	pAdd
	pMul
	pUnary
	pPow
	pAtom
)

func (n *node) prec() int {
	switch n.k {
	case kRel:
		return pRel
	case kUnion, kInter, kSetMinus:
		return pSet
	case kAdd, kPM:
		return pAdd
	case kMul, kDiv:
		return pMul
	case kNeg:
		return pUnary
	case kPow:
		return pPow
	case kNum:
		if n.rat.Sign() < 0 || !n.rat.IsInt() && !n.approx {
			return pMul
		}
	}
	return pAtom
}

func (n *node) renderIn(b *strings.Builder, outer int) {
	if n.prec() < outer {
		b.WriteByte('(')
		n.render(b, pLowest)
		b.WriteByte(')')
		return
	}
	n.render(b, outer)
}

func (n *node) render(b *strings.Builder, outer int) {
	switch n.k {
	case kNum:
		if n.approx && n.name != "" {
			b.WriteString(n.name)
		} else {
			b.WriteString(n.rat.RatString())
		}
	case kSym, kUFunc:
		b.WriteString(n.name)
		if n.k == kUFunc && strings.HasSuffix(n.name, "_") && len(n.args) == 1 && n.args[0].prec() == pAtom {
			n.args[0].render(b, pLowest)
		} else if n.k == kUFunc {
			b.WriteByte('(')
			renderList(b, n.args)
			b.WriteByte(')')
		}
	case kConst:
		b.WriteString(map[string]string{"pi": "pi", "e": "E", "i": "I", "inf": "oo"}[n.name])
	case kAdd:
		for i, a := range n.args {
			if i > 0 {
				if a.k == kNeg {
					b.WriteString(" - ")
					a.args[0].renderIn(b, pMul)
					continue
				}
				b.WriteString(" + ")
			}
			a.renderIn(b, pAdd)
		}
	case kMul:
		for i, a := range n.args {
			if i > 0 {
				b.WriteByte('*')
			}
			a.renderIn(b, pMul+1)
		}
	case kDiv:
		n.args[0].renderIn(b, pMul)
		if n.name == "ratio" {
			b.WriteByte(':')
		} else {
			b.WriteByte('/')
		}
		n.args[1].renderIn(b, pMul+1)
	case kNeg:
		b.WriteByte('-')
		n.args[0].renderIn(b, pUnary)
	case kPow:
		n.args[0].renderIn(b, pPow+1)
		b.WriteString("**")
		n.args[1].renderIn(b, pPow)
	case kFunc:
		b.WriteString(n.name)
		b.WriteByte('(')
		renderList(b, n.args)
		b.WriteByte(')')
	case kFact:
		n.args[0].renderIn(b, pAtom)
		b.WriteByte('!')
	case kPM:
		if n.args[0] != nil {
			n.args[0].renderIn(b, pAdd)
			b.WriteByte(' ')
		}
		if n.name == "mp" {
			b.WriteString("∓ ")
		} else {
			b.WriteString("± ")
		}
		n.args[1].renderIn(b, pMul)
	case kPercent:
		n.args[0].renderIn(b, pAtom)
		b.WriteByte('%')
	case kDegree:
		n.args[0].renderIn(b, pAtom)
		b.WriteString("°")
	case kBase:
		b.WriteString(n.name)
		b.WriteByte('_')
		b.WriteString(strconv.Itoa(n.cols))
	case kSum, kProd:
		if n.k == kSum {
			b.WriteString("Sum(")
		} else {
			b.WriteString("Product(")
		}
		n.args[2].render(b, pLowest)
		b.WriteString(", (")
		b.WriteString(n.name)
		b.WriteString(", ")
		n.args[0].render(b, pLowest)
		b.WriteString(", ")
		n.args[1].render(b, pLowest)
		b.WriteString("))")
	case kText:
		b.WriteString(strconv.Quote(n.name))
	case kRel:
		for i, a := range n.args {
			if i > 0 {
				b.WriteByte(' ')
				b.WriteString(relNames[n.ops[i-1]])
				b.WriteByte(' ')
			}
			a.renderIn(b, pRel+1)
		}
	case kTuple:
		b.WriteByte('(')
		renderList(b, n.args)
		if len(n.args) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case kInterval:
		if n.lopen {
			b.WriteByte('(')
		} else {
			b.WriteByte('[')
		}
		renderList(b, n.args)
		if n.ropen {
			b.WriteByte(')')
		} else {
			b.WriteByte(']')
		}
	case kSet:
		b.WriteByte('{')
		renderList(b, n.args)
		b.WriteByte('}')
	case kUnion, kInter, kSetMinus:
		sep := map[kind]string{kUnion: " U ", kInter: " & ", kSetMinus: " \\ "}[n.k]
		for i, a := range n.args {
			if i > 0 {
				b.WriteString(sep)
			}
			a.renderIn(b, pSet+1)
		}
	case kMatrix:
		b.WriteString("Matrix([")
		for r := 0; r*n.cols < len(n.args); r++ {
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('[')
			renderList(b, n.args[r*n.cols:(r+1)*n.cols])
			b.WriteByte(']')
		}
		b.WriteString("])")
	}
}

func renderList(b *strings.Builder, args []*node) {
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		a.render(b, pLowest)
	}
}

// walk calls f on n and its descendants, depth first, stopping a branch when
// f returns false.
func (n *node) walk(f func(*node) bool) {
	if n == nil || !f(n) {
		return
	}
	for _, a := range n.args {
		a.walk(f)
	}
}

// has reports whether some node of the tree satisfies f.
func (n *node) has(f func(*node) bool) bool {
	found := false
	n.walk(func(x *node) bool {
		if found {
			return false
		}
		if f(x) {
			found = true
			return false
		}
		return true
	})
	return found
}

// hasApprox reports whether a number written with a decimal point occurs in
// n: such a value may be a rounding, so it is compared at Options.Precision.
func (n *node) hasApprox() bool {
	return n.has(func(x *node) bool { return x.k == kNum && x.approx })
}

// clone copies the tree, renaming variables with ren when it is non-nil.
func (n *node) clone(ren map[string]string) *node {
	if n == nil {
		return nil
	}
	c := *n
	if ren != nil {
		if n.k == kSym {
			if to, ok := ren[n.name]; ok {
				c.name = to
			}
		}
		if (n.k == kSum || n.k == kProd) && ren[n.name] != "" {
			c.name = ren[n.name]
		}
	}
	if len(n.args) > 0 {
		c.args = make([]*node, len(n.args))
		for i, a := range n.args {
			c.args[i] = a.clone(ren)
		}
	}
	return &c
}
