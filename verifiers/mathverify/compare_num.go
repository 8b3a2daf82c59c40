package mathverify

import (
	"math"
	"math/big"
	"math/cmplx"
)

// Scalars: exactly, at a decimal precision, at a relative tolerance, or at
// probe points of positive, negative and mixed sign.

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
	if stepFunc(a) || stepFunc(b) {
		for i := numSamples; i < numSamples+numFar; i++ {
			c.bind(e, v, i)
			if i%2 == 1 {
				for j := range e.vals {
					e.vals[j] = -e.vals[j]
				}
			}
			za, ok1 := c.ev.eval(a, e)
			zb, ok2 := c.ev.eval(b, e)
			if ok1 != ok2 || ok1 && !closeRel(za, zb) {
				return false
			}
		}
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
			e.vals[j] = complex(c.sampleValue(i, j), 0)
		}
	}
}
