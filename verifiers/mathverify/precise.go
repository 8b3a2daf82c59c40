package mathverify

import (
	"math/big"
)

// High-precision evaluation for the one case float64 cannot settle: a Σ or
// Π of rational terms whose value is within float64's rounding of the
// other side. Σ_{k=1}^{10000} 1/k^50 is 1 + 8.9·10^−16, which no float64
// tolerance tells from 1; summed at precisePrec bits it differs from 1 at
// the 50th bit. Numbers enter exactly and every operation rounds to
// precisePrec bits.

// precisePrec is the mantissa of the high-precision path, in bits.
const precisePrec = 256

// preciseTol is the relative difference below which two high-precision
// values are equal: far below any visible difference, far above the
// rounding of ≤ maxSumTerms additions at precisePrec bits.
var preciseTol = new(big.Float).SetMantExp(big.NewFloat(1), -200)

// precise evaluates a constant n built from rationals, +, ·, ÷, − and
// Σ/Π with integer bounds, to precisePrec bits.
func (ev *evaluator) precise(n *node) (*big.Float, bool) {
	if !ev.bud.ok() {
		return nil, false
	}
	switch n.k {
	case kNum, kBase:
		return new(big.Float).SetPrec(precisePrec).SetRat(n.rat), true
	case kPow:
		x, ok := ev.precise(n.args[0])
		if !ok {
			return nil, false
		}
		e, ok := ev.exact(n.args[1])
		if !ok || !e.IsInt() || !e.Num().IsInt64() {
			return nil, false
		}
		k := e.Num().Int64()
		if k > int64(ev.o.MaxExponent) || k < -int64(ev.o.MaxExponent) || k < 0 && x.Sign() == 0 {
			return nil, false
		}
		return powFloat(x, k), true
	case kNeg:
		x, ok := ev.precise(n.args[0])
		if !ok {
			return nil, false
		}
		return x.Neg(x), true
	case kAdd, kMul:
		acc := new(big.Float).SetPrec(precisePrec)
		if n.k == kMul {
			acc.SetInt64(1)
		}
		for _, a := range n.args {
			x, ok := ev.precise(a)
			if !ok {
				return nil, false
			}
			if n.k == kAdd {
				acc.Add(acc, x)
			} else {
				acc.Mul(acc, x)
			}
		}
		return acc, true
	case kDiv:
		a, ok1 := ev.precise(n.args[0])
		b, ok2 := ev.precise(n.args[1])
		if !ok1 || !ok2 || b.Sign() == 0 {
			return nil, false
		}
		return a.Quo(a, b), true
	case kSum, kProd:
		return ev.preciseBigOp(n)
	}
	if r, ok := ev.exact(n); ok {
		return new(big.Float).SetPrec(precisePrec).SetRat(r), true
	}
	return nil, false
}

// powFloat returns x^k by repeated squaring, in x's precision. It
// squares into a second buffer rather than in place: big.Float allocates
// anew when a product aliases its operand.
func powFloat(x *big.Float, k int64) *big.Float {
	neg := k < 0
	if neg {
		k = -k
	}
	r := new(big.Float).SetPrec(precisePrec).SetInt64(1)
	t := new(big.Float).SetPrec(precisePrec)
	sq := new(big.Float).SetPrec(precisePrec)
	for ; k > 0; k >>= 1 {
		if k&1 == 1 {
			t.Mul(r, x)
			r, t = t, r
		}
		if k > 1 {
			sq.Mul(x, x)
			x, sq = sq, x
		}
	}
	if neg {
		t.SetInt64(1)
		sq.Quo(t, r)
		return sq
	}
	return r
}

func (ev *evaluator) preciseBigOp(n *node) (*big.Float, bool) {
	lo, ok1 := ev.exact(n.args[0])
	hi, ok2 := ev.exact(n.args[1])
	if !ok1 || !ok2 || !lo.IsInt() || !hi.IsInt() || !lo.Num().IsInt64() || !hi.Num().IsInt64() {
		return nil, false
	}
	a, b := lo.Num().Int64(), hi.Num().Int64()
	if b-a >= maxSumTerms {
		return nil, false
	}
	acc := new(big.Float).SetPrec(precisePrec)
	if n.k == kProd {
		acc.SetInt64(1)
	}
	k := &node{k: kNum, rat: new(big.Rat)}
	term := substitute(n.args[2], n.name, k)
	for i := a; i <= b; i++ {
		k.rat.SetInt64(i)
		x, ok := ev.precise(term)
		if !ok {
			return nil, false
		}
		if n.k == kSum {
			acc.Add(acc, x)
		} else {
			acc.Mul(acc, x)
		}
	}
	return acc, true
}

// substitute returns n with every free occurrence of the variable name
// replaced by the node v (shared, so that the caller can change its
// value between evaluations).
func substitute(n *node, name string, v *node) *node {
	if n == nil {
		return nil
	}
	if n.k == kSym && n.name == name {
		return v
	}
	if (n.k == kSum || n.k == kProd) && n.name == name {
		return n // the name is bound again inside
	}
	if len(n.args) == 0 {
		return n
	}
	c := *n
	c.args = make([]*node, len(n.args))
	for i, a := range n.args {
		c.args[i] = substitute(a, name, v)
	}
	return &c
}

// preciseEqual settles a comparison that float64 found equal when a side
// holds a Σ or Π: ok is false when a side has no high-precision value.
func (c *comparer) preciseEqual(a, b *node) (equal, ok bool) {
	bigOp := func(x *node) bool { return x.k == kSum || x.k == kProd }
	if !a.has(bigOp) && !b.has(bigOp) {
		return false, false
	}
	pa, ok1 := c.ev.precise(a)
	pb, ok2 := c.ev.precise(b)
	if !ok1 || !ok2 {
		return false, false
	}
	d := new(big.Float).SetPrec(precisePrec).Sub(pa, pb)
	d.Abs(d)
	m := new(big.Float).Abs(pa)
	if mb := new(big.Float).Abs(pb); mb.Cmp(m) > 0 {
		m = mb
	}
	if m.Sign() == 0 {
		return true, true
	}
	return d.Cmp(m.Mul(m, preciseTol)) <= 0, true
}
