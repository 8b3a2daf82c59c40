// Package kernel holds the inner loops of rlpost's hot paths: a fast exp,
// and AVX2 assembly for the token-level policy loss, with portable Go for
// every other processor (and for all of them under the purego build tag).
//
// Exp trades the last few bits of math.Exp's accuracy for speed: it is
// branch-light and calls nothing, and its slice form ExpSlice evaluates four
// lanes per AVX2 instruction. Its relative error is below 2e-9 over the
// whole float64 range that does not overflow, far inside float32 rounding
// (6e-8), so float32 results are the correctly rounded ones in almost every
// case and within one ulp always. Float64 callers that differentiate
// numerically should use math.Exp.
//
// The policy-loss kernel (PolicyTokens) works in eight float32 lanes, as a
// plain C loop over float32 data does, with its own float32 exponential
// (relative error 7.3e-8 measured, below one float32 ulp; TestExp32Accuracy)
// and float64 sums; its gradient is within 1.3e-6 (relative) of the
// portable Go loop's, which computes in float64 and rounds once
// (ppo.TestAssemblyMatchesGo logs both against the float64 result).
package kernel

import "math"

const (
	log2e = 1.4426950408889634074
	// ln2Hi + ln2Lo = ln 2 to well beyond float64 precision; ln2Hi has
	// trailing zero bits so that k·ln2Hi is exact for |k| < 2^11 (Cody and
	// Waite's argument reduction).
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	// Adding then subtracting 1.5·2^52 rounds a float64 of magnitude below
	// 2^51 to the nearest integer without a function call.
	roundMagic = 6755399441055744.0

	// Exp overflows above maxArg and underflows to 0 below minArg.
	maxArg = 709.78
	minArg = -708.39
)

// Exp returns e^x with relative error below 2e-9. It returns +Inf for
// x > 709.78, 0 for x < −708.39 (where math.Exp would return a subnormal)
// and NaN for NaN.
func Exp(x float64) float64 {
	if x > maxArg {
		return math.Inf(1)
	}
	if !(x >= minArg) { // also catches NaN
		if x != x {
			return x
		}
		return 0
	}
	// x = k·ln2 + r with |r| ≤ ln2/2, then e^x = 2^k · e^r.
	t := x*log2e + roundMagic
	k := int64(math.Float64bits(t) - math.Float64bits(roundMagic))
	kf := t - roundMagic
	r := (x - kf*ln2Hi) - kf*ln2Lo
	// e^r by its Taylor series through r^8/8! (truncation error below
	// 0.3466^9/9! ≈ 2.0e-10), evaluated in Estrin's scheme so the
	// multiplications overlap instead of forming one long dependency chain.
	r2 := r * r
	r4 := r2 * r2
	p01 := 1 + r
	p23 := 1.0/2 + r*(1.0/6)
	p45 := 1.0/24 + r*(1.0/120)
	p67 := 1.0/720 + r*(1.0/5040)
	p := (p01 + r2*p23) + r4*((p45+r2*p67)+r4*(1.0/40320))
	return p * math.Float64frombits(uint64(k+1023)<<52)
}

// ExpSlice sets dst[i] = Exp(src[i]) for every i; dst must be at least as
// long as src and may be the same slice. On amd64 processors with AVX2 and
// FMA it evaluates four elements per instruction; elsewhere a block at a
// time in a call-free loop.
func ExpSlice(dst, src []float64) {
	dst = dst[:len(src)]
	if HasAVX2 {
		n := len(src) &^ 3
		expAVX2(dst[:n], src[:n])
		if n < len(src) {
			// The last 1–3 elements go through the vector kernel too, so an
			// element's bits do not depend on its position in the slice:
			// a packed row and the same row padded give the same result.
			var in, out [4]float64
			copy(in[:], src[n:])
			expAVX2(out[:], in[:])
			copy(dst[n:], out[:])
		}
		return
	}
	expGeneric(dst, src)
}

// expGeneric is ExpSlice in portable Go. Exp is not inlined, but the call
// costs little next to the polynomial (measured: 5.4 ns per element either
// way, against 1.1 ns for the AVX2 kernel).
func expGeneric(dst, src []float64) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = Exp(x)
	}
}
