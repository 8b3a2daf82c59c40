package mathverify

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/big"
	"math/cmplx"
	"sort"
	"time"
)

// errTimeout is returned when Options.Timeout runs out.
var errTimeout = errors.New("mathverify: time budget exhausted")

// budget is the per-call time limit. ok is called in every loop that can
// run long; it looks at the clock every 64 calls to stay cheap.
type budget struct {
	ctx      context.Context
	deadline time.Time
	// grace is the deadline for a call that has done little work: a
	// typical verification takes under 200 steps, so one that passes
	// Options.Timeout after fewer than minBudgetSteps was descheduled, not
	// expensive, and gets graceFactor times the time before it stops.
	grace time.Time
	timed bool
	n     int
	err   error
}

// Time-budget grace for cheap calls on a loaded machine.
const (
	minBudgetSteps = 256
	graceFactor    = 4
)

func newBudget(ctx context.Context, timeout time.Duration) *budget {
	b := &budget{ctx: ctx}
	if timeout > 0 {
		now := time.Now()
		b.deadline, b.grace, b.timed = now.Add(timeout), now.Add(graceFactor*timeout), true
	}
	return b
}

func (b *budget) ok() bool {
	if b == nil {
		return true
	}
	if b.err != nil {
		return false
	}
	b.n++
	if b.n&63 != 0 {
		return true
	}
	return b.check()
}

func (b *budget) check() bool {
	if b.err != nil {
		return false
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return false
	}
	if b.timed {
		now := time.Now()
		if now.After(b.deadline) && (b.n >= minBudgetSteps || now.After(b.grace)) {
			b.err = errTimeout
			return false
		}
	}
	return true
}

// maxExactBits bounds the size of an exact intermediate result; beyond it
// evaluation falls back to floating point.
const maxExactBits = 1 << 18

// maxSumTerms bounds the terms of a Σ or Π evaluated numerically.
const maxSumTerms = 10000

func ratBits(r *big.Rat) int { return r.Num().BitLen() + r.Denom().BitLen() }

// evaluator computes values of expression trees.
type evaluator struct {
	o   *Options
	bud *budget
}

// exact evaluates n as a rational number when that needs no rounding:
// integers, fractions, decimals, integer powers, perfect roots, factorials.
func (ev *evaluator) exact(n *node) (*big.Rat, bool) {
	if !ev.bud.ok() {
		return nil, false
	}
	switch n.k {
	case kNum, kBase:
		return n.rat, true
	case kNeg:
		x, ok := ev.exact(n.args[0])
		if !ok {
			return nil, false
		}
		return new(big.Rat).Neg(x), true
	case kAdd, kMul:
		acc := new(big.Rat)
		if n.k == kMul {
			acc.SetInt64(1)
		}
		for _, a := range n.args {
			x, ok := ev.exact(a)
			if !ok {
				return nil, false
			}
			if n.k == kAdd {
				acc.Add(acc, x)
			} else {
				acc.Mul(acc, x)
			}
			if ratBits(acc) > maxExactBits {
				return nil, false
			}
		}
		return acc, true
	case kDiv:
		a, ok := ev.exact(n.args[0])
		if !ok {
			return nil, false
		}
		b, ok := ev.exact(n.args[1])
		if !ok || b.Sign() == 0 {
			return nil, false
		}
		return new(big.Rat).Quo(a, b), true
	case kPow:
		a, ok := ev.exact(n.args[0])
		if !ok {
			return nil, false
		}
		b, ok := ev.exact(n.args[1])
		if !ok {
			return nil, false
		}
		return ev.exactPow(a, b)
	case kPercent:
		x, ok := ev.exact(n.args[0])
		if !ok {
			return nil, false
		}
		return new(big.Rat).Quo(x, big.NewRat(100, 1)), true
	case kDegree:
		return ev.exact(n.args[0])
	case kFact:
		x, ok := ev.exact(n.args[0])
		if !ok || !x.IsInt() || x.Sign() < 0 || x.Num().Cmp(big.NewInt(int64(ev.o.MaxFactorial))) > 0 {
			return nil, false
		}
		f := new(big.Int).MulRange(1, x.Num().Int64())
		return new(big.Rat).SetInt(f), true
	case kFunc:
		return ev.exactFunc(n)
	}
	return nil, false
}

func (ev *evaluator) exactFunc(n *node) (*big.Rat, bool) {
	args := make([]*big.Rat, len(n.args))
	for i, a := range n.args {
		x, ok := ev.exact(a)
		if !ok {
			return nil, false
		}
		args[i] = x
	}
	switch n.name {
	case "sqrt":
		return exactRoot(args[0], 2)
	case "root":
		if len(args) != 2 || !args[1].IsInt() || !args[1].Num().IsInt64() {
			return nil, false
		}
		return exactRoot(args[0], args[1].Num().Int64())
	case "abs":
		return new(big.Rat).Abs(args[0]), true
	case "floor", "ceil":
		q, m := new(big.Int).DivMod(args[0].Num(), args[0].Denom(), new(big.Int))
		if n.name == "ceil" && m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		return new(big.Rat).SetInt(q), true
	case "sgn":
		return big.NewRat(int64(args[0].Sign()), 1), true
	case "binom":
		if len(args) != 2 || !args[0].IsInt() || !args[1].IsInt() {
			return nil, false
		}
		nn, kk := args[0].Num(), args[1].Num()
		if nn.Sign() < 0 || nn.Cmp(big.NewInt(int64(ev.o.MaxFactorial))) > 0 {
			return nil, false
		}
		if kk.Sign() < 0 || kk.Cmp(nn) > 0 {
			return new(big.Rat), true
		}
		return new(big.Rat).SetInt(new(big.Int).Binomial(nn.Int64(), kk.Int64())), true
	case "max", "min":
		if len(args) == 0 {
			return nil, false
		}
		best := args[0]
		for _, a := range args[1:] {
			if c := a.Cmp(best); n.name == "max" && c > 0 || n.name == "min" && c < 0 {
				best = a
			}
		}
		return best, true
	case "gcd", "lcm":
		if len(args) == 0 {
			return nil, false
		}
		acc := new(big.Int)
		for i, a := range args {
			if !a.IsInt() {
				return nil, false
			}
			v := new(big.Int).Abs(a.Num())
			switch {
			case i == 0:
				acc.Set(v)
			case n.name == "gcd":
				acc.GCD(nil, nil, acc, v)
			case acc.Sign() != 0 && v.Sign() != 0:
				g := new(big.Int).GCD(nil, nil, acc, v)
				acc.Mul(acc, v).Quo(acc, g)
			default:
				acc.SetInt64(0)
			}
		}
		return new(big.Rat).SetInt(acc), true
	}
	return nil, false
}

// exactPow computes a^b when the result is rational and small enough.
func (ev *evaluator) exactPow(a, b *big.Rat) (*big.Rat, bool) {
	if !b.IsInt() {
		q := b.Denom()
		if !q.IsInt64() || q.Int64() > 64 {
			return nil, false
		}
		if a.Sign() < 0 {
			return nil, false // principal roots of negatives are complex
		}
		r, ok := exactRoot(a, q.Int64())
		if !ok {
			return nil, false
		}
		return ev.exactPow(r, new(big.Rat).SetInt(b.Num()))
	}
	k := b.Num()
	if !k.IsInt64() || k.Int64() > int64(ev.o.MaxExponent) || k.Int64() < -int64(ev.o.MaxExponent) {
		return nil, false
	}
	e := k.Int64()
	if a.Sign() == 0 {
		if e < 0 {
			return nil, false
		}
		if e == 0 {
			return big.NewRat(1, 1), true
		}
		return new(big.Rat), true
	}
	abs := e
	if abs < 0 {
		abs = -abs
	}
	if int64(ratBits(a))*abs > maxExactBits {
		return nil, false
	}
	num := new(big.Int).Exp(a.Num(), big.NewInt(abs), nil)
	den := new(big.Int).Exp(a.Denom(), big.NewInt(abs), nil)
	if e < 0 {
		num, den = den, num
		if den.Sign() < 0 {
			num.Neg(num)
			den.Neg(den)
		}
	}
	return new(big.Rat).SetFrac(num, den), true
}

// exactRoot returns the q-th root of x when it is rational. Odd roots of
// negative numbers are real (∛−8 = −2), as a reader of \sqrt[3]{-8} means.
func exactRoot(x *big.Rat, q int64) (*big.Rat, bool) {
	if q < 1 || q > 64 {
		return nil, false
	}
	if q == 1 {
		return x, true
	}
	if x.Sign() < 0 {
		if q%2 == 0 {
			return nil, false
		}
		r, ok := exactRoot(new(big.Rat).Neg(x), q)
		if !ok {
			return nil, false
		}
		return r.Neg(r), true
	}
	n, ok1 := intRoot(x.Num(), q)
	d, ok2 := intRoot(x.Denom(), q)
	if !ok1 || !ok2 {
		return nil, false
	}
	return new(big.Rat).SetFrac(n, d), true
}

// intRoot returns the exact q-th root of n ≥ 0 if n is a perfect power.
func intRoot(n *big.Int, q int64) (*big.Int, bool) {
	if n.Sign() == 0 {
		return new(big.Int), true
	}
	if q == 2 {
		r := new(big.Int).Sqrt(n)
		return r, new(big.Int).Mul(r, r).Cmp(n) == 0
	}
	if n.BitLen() > 4096 {
		return nil, false
	}
	f, _ := new(big.Float).SetInt(n).Float64()
	guess := math.Round(math.Pow(f, 1/float64(q)))
	if math.IsInf(guess, 0) || guess > 1e15 {
		return nil, false
	}
	for _, d := range [...]float64{0, -1, 1} {
		r := big.NewInt(int64(guess + d))
		if r.Sign() < 0 {
			continue
		}
		if new(big.Int).Exp(r, big.NewInt(q), nil).Cmp(n) == 0 {
			return r, true
		}
	}
	return nil, false
}

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
