package mathverify

import (
	"hash/fnv"
	"math"
	"math/cmplx"
	"sort"
)

// env binds variables to values for numeric evaluation.
type env struct {
	names []string
	vals  []complex128
}

func (e *env) lookup(name string) (complex128, bool) {
	if e == nil {
		return 0, false
	}
	for i := len(e.names) - 1; i >= 0; i-- {
		if e.names[i] == name {
			return e.vals[i], true
		}
	}
	return 0, false
}

func finite(z complex128) bool {
	return !math.IsNaN(real(z)) && !math.IsNaN(imag(z)) && !math.IsInf(real(z), 0) && !math.IsInf(imag(z), 0)
}

func isReal(z complex128) bool { return math.Abs(imag(z)) <= 1e-12*math.Max(1, math.Abs(real(z))) }

// eval evaluates n in complex floating point. It reports false for an
// undefined or non-finite value or an unbound variable.
func (ev *evaluator) eval(n *node, e *env) (complex128, bool) {
	if !ev.bud.ok() {
		return 0, false
	}
	z, ok := ev.eval1(n, e)
	return z, ok && finite(z)
}

func (ev *evaluator) eval1(n *node, e *env) (complex128, bool) {
	switch n.k {
	case kNum, kBase:
		f, _ := n.rat.Float64()
		return complex(f, 0), true
	case kSym:
		return e.lookup(n.name)
	case kConst:
		switch n.name {
		case "pi":
			return math.Pi, true
		case "e":
			return math.E, true
		case "i":
			return 1i, true
		}
		return 0, false
	case kAdd, kMul:
		acc := complex(0, 0)
		if n.k == kMul {
			acc = 1
		}
		for _, a := range n.args {
			x, ok := ev.eval(a, e)
			if !ok {
				return 0, false
			}
			if n.k == kAdd {
				acc += x
			} else {
				acc *= x
			}
		}
		return acc, true
	case kDiv:
		a, ok1 := ev.eval(n.args[0], e)
		b, ok2 := ev.eval(n.args[1], e)
		if !ok1 || !ok2 || b == 0 {
			return 0, false
		}
		return a / b, true
	case kNeg:
		x, ok := ev.eval(n.args[0], e)
		return -x, ok
	case kPow:
		a, ok1 := ev.eval(n.args[0], e)
		b, ok2 := ev.eval(n.args[1], e)
		if !ok1 || !ok2 {
			return 0, false
		}
		return powC(a, b)
	case kPercent:
		x, ok := ev.eval(n.args[0], e)
		return x / 100, ok
	case kDegree:
		return ev.eval(n.args[0], e)
	case kFact:
		x, ok := ev.eval(n.args[0], e)
		if !ok || !isReal(x) {
			return 0, false
		}
		r := real(x)
		if r < 0 && r == math.Trunc(r) || r > 170 {
			return 0, false
		}
		return complex(math.Gamma(r+1), 0), true
	case kFunc:
		return ev.evalFunc(n, e)
	case kUFunc:
		vals := make([]complex128, len(n.args))
		for i, a := range n.args {
			x, ok := ev.eval(a, e)
			if !ok {
				return 0, false
			}
			vals[i] = x
		}
		return ufunc(n.name, vals), true
	case kSum, kProd:
		return ev.evalBigOp(n, e)
	}
	return 0, false
}

// ufunc is a fixed smooth function per name standing in for an unknown
// function or an indexed symbol: f(x) and f(y) differ, f(x) equals f(x).
func ufunc(name string, args []complex128) complex128 {
	h := fnv.New64a()
	h.Write([]byte(name))
	s := h.Sum64()
	u := complex(0.37+float64(s%97)/61, 0)
	for j, v := range args {
		w := 0.5 + float64((s>>(8*uint(j%8)))&255)/200
		u += complex(w*float64(j+1), 0) * v
	}
	return cmplx.Sin(u)*1.3 + 0.7*u + complex(float64(s%13)/7, 0)
}

func powC(a, b complex128) (complex128, bool) {
	if imag(a) == 0 && imag(b) == 0 {
		x, y := real(a), real(b)
		if x > 0 || y == math.Trunc(y) {
			r := math.Pow(x, y)
			return complex(r, 0), !math.IsInf(r, 0) && !math.IsNaN(r)
		}
		if x == 0 {
			if y > 0 {
				return 0, true
			}
			return 0, false
		}
	}
	if a == 0 {
		if real(b) > 0 {
			return 0, true
		}
		return 0, false
	}
	return cmplx.Pow(a, b), true
}

func realArg(z complex128) (float64, bool) {
	if !isReal(z) {
		return 0, false
	}
	return real(z), true
}

// trigFuncs take an angle: a degree mark in their argument converts to
// radians there, while elsewhere 90° is just 90.
var trigFuncs = setOf("sin", "cos", "tan", "sec", "csc", "cot")

// toRadians rewrites x° as x·π/180.
func toRadians(n *node) *node {
	if !n.has(func(x *node) bool { return x.k == kDegree }) {
		return n
	}
	if n.k == kDegree {
		return bin(kMul, n.args[0], bin(kDiv, cnst("pi"), intNode(180)))
	}
	c := *n
	c.args = make([]*node, len(n.args))
	for i, a := range n.args {
		c.args[i] = toRadians(a)
	}
	return &c
}

func (ev *evaluator) evalFunc(n *node, e *env) (complex128, bool) {
	args := make([]complex128, len(n.args))
	for i, a := range n.args {
		if trigFuncs[n.name] {
			a = toRadians(a)
		}
		x, ok := ev.eval(a, e)
		if !ok {
			return 0, false
		}
		args[i] = x
	}
	if len(args) == 0 {
		return 0, false
	}
	x := args[0]
	if f, ok := complexFuncs[n.name]; ok {
		return f(x), true
	}
	if f, ok := reciprocalFuncs[n.name]; ok {
		return inv(complexFuncs[f](x))
	}
	if f, ok := arcReciprocalFuncs[n.name]; ok {
		y, ok := inv(x)
		if !ok {
			return 0, false
		}
		return complexFuncs[f](y), true
	}
	r, real1 := realArg(x)
	switch n.name {
	case "sqrt":
		if real1 && r >= 0 {
			return complex(math.Sqrt(r), 0), true
		}
		return cmplx.Sqrt(x), true
	case "root":
		if len(args) != 2 {
			return 0, false
		}
		k, ok := realArg(args[1])
		if !ok || k == 0 {
			return 0, false
		}
		if real1 && r < 0 && k == math.Trunc(k) && math.Mod(k, 2) != 0 {
			return complex(-math.Pow(-r, 1/k), 0), true
		}
		return powC(x, complex(1/k, 0))
	case "ln", "log":
		l, ok := logC(x)
		if !ok {
			return 0, false
		}
		if len(args) == 2 {
			b, ok := logC(args[1])
			if !ok || b == 0 {
				return 0, false
			}
			return l / b, true
		}
		return l, true
	case "abs":
		return complex(cmplx.Abs(x), 0), true
	case "floor", "ceil", "sgn":
		if !real1 {
			return 0, false
		}
		switch n.name {
		case "floor":
			return complex(math.Floor(r+1e-12*math.Max(1, math.Abs(r))), 0), true
		case "ceil":
			return complex(math.Ceil(r-1e-12*math.Max(1, math.Abs(r))), 0), true
		}
		switch {
		case r > 0:
			return 1, true
		case r < 0:
			return -1, true
		}
		return 0, true
	case "max", "min":
		best := math.NaN()
		for _, a := range args {
			v, ok := realArg(a)
			if !ok {
				return 0, false
			}
			if math.IsNaN(best) || n.name == "max" && v > best || n.name == "min" && v < best {
				best = v
			}
		}
		return complex(best, 0), true
	case "binom":
		if len(args) != 2 {
			return 0, false
		}
		k, ok := realArg(args[1])
		if !real1 || !ok {
			return 0, false
		}
		if r == math.Trunc(r) && k == math.Trunc(k) && r >= 0 && (k < 0 || k > r) {
			return 0, true
		}
		a, _ := math.Lgamma(r + 1)
		b, _ := math.Lgamma(k + 1)
		c, _ := math.Lgamma(r - k + 1)
		return complex(math.Round(math.Exp(a-b-c)*1e9)/1e9, 0), true
	case "gcd", "lcm":
		acc := 0.0
		for i, a := range args {
			v, ok := realArg(a)
			if !ok || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				return 0, false
			}
			v = math.Abs(v)
			switch {
			case i == 0:
				acc = v
			case n.name == "gcd":
				acc = gcdF(acc, v)
			case acc != 0 && v != 0:
				acc = acc / gcdF(acc, v) * v
			default:
				acc = 0
			}
		}
		return complex(acc, 0), true
	}
	return 0, false
}

// complexFuncs are the functions math/cmplx computes directly; the others
// are reciprocals (sec = 1/cos) or inverses of reciprocals
// (arcsec x = arccos 1/x).
var (
	complexFuncs = map[string]func(complex128) complex128{
		"sin": cmplx.Sin, "cos": cmplx.Cos, "tan": cmplx.Tan, "arcsin": cmplx.Asin, "arccos": cmplx.Acos,
		"arctan": cmplx.Atan, "sinh": cmplx.Sinh, "cosh": cmplx.Cosh, "tanh": cmplx.Tanh, "exp": cmplx.Exp,
	}
	reciprocalFuncs    = map[string]string{"sec": "cos", "csc": "sin", "cot": "tan", "coth": "tanh", "sech": "cosh", "csch": "sinh"}
	arcReciprocalFuncs = map[string]string{"arcsec": "arccos", "arccsc": "arcsin", "arccot": "arctan"}
)

func gcdF(a, b float64) float64 {
	for b != 0 {
		a, b = b, math.Mod(a, b)
	}
	return a
}

func inv(z complex128) (complex128, bool) {
	if z == 0 {
		return 0, false
	}
	return 1 / z, true
}

func logC(z complex128) (complex128, bool) {
	if z == 0 {
		return 0, false
	}
	if r, ok := realArg(z); ok && r > 0 {
		return complex(math.Log(r), 0), true
	}
	return cmplx.Log(z), true
}

// nearInt returns the integer z is within rounding of.
func nearInt(z complex128) (int64, bool) {
	r, ok := realArg(z)
	if !ok || math.Abs(r) > 1<<40 {
		return 0, false
	}
	k := math.Round(r)
	if math.Abs(r-k) > 1e-9*math.Max(1, math.Abs(r)) {
		return 0, false
	}
	return int64(k), true
}

func (ev *evaluator) evalBigOp(n *node, e *env) (complex128, bool) {
	lo, ok1 := ev.eval(n.args[0], e)
	hi, ok2 := ev.eval(n.args[1], e)
	if !ok1 || !ok2 {
		return 0, false
	}
	a, ok1 := nearInt(lo)
	b, ok2 := nearInt(hi)
	if !ok1 || !ok2 || b-a >= maxSumTerms {
		return 0, false
	}
	acc := complex(0, 0)
	if n.k == kProd {
		acc = 1
	}
	if e == nil {
		e = &env{}
	}
	e.names = append(e.names, n.name)
	e.vals = append(e.vals, 0)
	defer func() {
		e.names = e.names[:len(e.names)-1]
		e.vals = e.vals[:len(e.vals)-1]
	}()
	for k := a; k <= b; k++ {
		e.vals[len(e.vals)-1] = complex(float64(k), 0)
		x, ok := ev.eval(n.args[2], e)
		if !ok {
			return 0, false
		}
		if n.k == kSum {
			acc += x
		} else {
			acc *= x
		}
	}
	return acc, true
}

// realValue evaluates an interval endpoint: ±∞ or a real number.
func (ev *evaluator) realValue(n *node) (float64, bool) {
	switch {
	case n.k == kConst && n.name == "inf":
		return math.Inf(1), true
	case n.k == kNeg && n.args[0].k == kConst && n.args[0].name == "inf":
		return math.Inf(-1), true
	}
	if r, ok := ev.exact(n); ok {
		f, _ := r.Float64()
		return f, true
	}
	z, ok := ev.eval(n, nil)
	if !ok || !isReal(z) {
		return 0, false
	}
	return real(z), true
}

// vars lists the free variables of a tree; ints are those that must take
// integer values (they appear in summation bounds).
type vars struct {
	names []string
	ints  map[string]bool
}

func freeVars(ns ...*node) vars {
	seen := map[string]bool{}
	ints := map[string]bool{}
	var bound []string
	var walk func(n *node, intCtx bool)
	walk = func(n *node, intCtx bool) {
		if n == nil {
			return
		}
		switch n.k {
		case kSym:
			for _, b := range bound {
				if b == n.name {
					return
				}
			}
			seen[n.name] = true
			if intCtx {
				ints[n.name] = true
			}
			return
		case kSum, kProd:
			walk(n.args[0], true)
			walk(n.args[1], true)
			bound = append(bound, n.name)
			walk(n.args[2], intCtx)
			bound = bound[:len(bound)-1]
			return
		}
		for _, a := range n.args {
			walk(a, intCtx)
		}
	}
	for _, n := range ns {
		walk(n, false)
	}
	v := vars{ints: ints}
	for name := range seen {
		v.names = append(v.names, name)
	}
	sort.Strings(v.names)
	return v
}
