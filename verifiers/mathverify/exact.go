package mathverify

import (
	"math"
	"math/big"
	"math/bits"
)

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
			if !ev.bud.bigOp(ratBits(acc), ratBits(x)) {
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
		if !ok || b.Sign() == 0 || !ev.bud.bigOp(ratBits(a), ratBits(b)) {
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
		// log2(n!) < n·log2(n): charged as one product of that size.
		k := x.Num().Int64()
		if !ev.bud.bigOp(int(k)*bits.Len64(uint64(k)), 0) {
			return nil, false
		}
		f := new(big.Int).MulRange(1, k)
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
	if len(args) > 0 && !ev.bud.bigOp(ratBits(args[0]), 0) {
		return nil, false
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
		if !ev.bud.bigOp(ratBits(args[0]), 0) {
			return nil, false
		}
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
		if k := nn.Int64(); !ev.bud.bigOp(int(k)*bits.Len64(uint64(k)), 0) {
			return nil, false
		}
		return new(big.Rat).SetInt(new(big.Int).Binomial(nn.Int64(), kk.Int64())), true
	case "max", "min":
		if len(args) == 0 {
			return nil, false
		}
		best := args[0]
		for _, a := range args[1:] {
			if !ev.bud.bigOp(ratBits(a), ratBits(best)) {
				return nil, false
			}
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
			if !ev.bud.bigOp(acc.BitLen(), v.BitLen()) {
				return nil, false
			}
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
	if int64(ratBits(a))*abs > maxExactBits || !ev.bud.bigOp(int(int64(ratBits(a))*abs), 0) {
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
