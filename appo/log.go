package appo

import (
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// logs writes log x[i] into dst[i] for every x[i] > 0, and 0 where x[i]
// is 0: the convention 0·log 0 = 0 of the KL sums, so that a dot product
// with dst needs no special case. x holds finite values ≥ 0; dst may be x
// itself when F is float64.
//
// The KL sums take one logarithm per vocabulary entry of every distribution
// and every slot mean: on the paper's sizes some 10⁸ a group, most of the
// work. math.Log costs about 16 ns here; this loop a fraction of that, with
// an error below 1e-16 + 2.3e-16·|log x| (TestLogAccuracy), math.Log's own
// accuracy to a few ulps and far below what float32 inputs carry. It is a
// loop over a slice rather than a function of one number so that the body
// is inlined where the work is.
//
// x = 2^k·z with z ∈ [0.6875, 1.375), found by integer arithmetic on the
// bits; z falls in one of 128 buckets, each with a centre c whose inverse
// and logarithm are tabulated, so that
//
//	log x = k·ln 2 + log c + log1p(r),  r = z/c − 1 = z·(1/c) − 1,
//
// with |r| < 2⁻⁷ and log1p(r) from its Taylor series through r⁷ (error
// below |r|⁸/8 < 2⁻⁵⁹). The fused multiply-add makes r exact up to one
// rounding. The two buckets around 1 use c = 1, so log x stays accurate
// relative to its size where log x is close to 0. Subnormal x are
// scaled by 2⁶⁴ and take math.Log.
func logs[F tensor.Float](dst []float64, x []F) {
	dst = dst[:len(x)]
	for i, v := range x {
		y := float64(v)
		iy := math.Float64bits(y)
		if iy-minNormal >= maxFinite-minNormal+1 {
			dst[i] = 0
			if y > 0 {
				dst[i] = logSubnormal(y)
			}
			continue
		}
		tmp := iy - logOff
		b := (tmp >> (52 - logBits)) & (logBuckets - 1)
		k := float64(int64(tmp) >> 52)
		z := math.Float64frombits(iy - tmp&(0xfff<<52))
		r := math.FMA(z, logInvC[b], -1)
		r2 := r * r
		p := r + r2*(-1.0/2+r*(1.0/3)+r2*(-1.0/4+r*(1.0/5)+r2*(-1.0/6+r*(1.0/7))))
		dst[i] = (k*ln2Hi + logLogC[b]) + (k*ln2Lo + p)
	}
}

const (
	logBits = 7
	// logOff is the bit pattern of 0.6875, the bottom of z's range.
	logOff     = 0x3fe6000000000000
	minNormal  = 0x0010000000000000
	maxFinite  = 0x7fefffffffffffff
	ln2Hi      = 6.93147180369123816490e-01 // ln 2 with trailing zero bits: k·ln2Hi is exact
	ln2Lo      = 1.90821492927058770002e-10 // ln 2 − ln2Hi
	logBuckets = 1 << logBits
)

// logInvC[i] is 1/c for bucket i, rounded; logLogC[i] = −log(logInvC[i]),
// so that log z = log1p(z·logInvC[i] − 1) + logLogC[i] holds whatever the
// rounding of the inverse.
var logInvC, logLogC [logBuckets]float64

func init() {
	for i := range logBuckets {
		lo := math.Float64frombits(logOff + uint64(i)<<(52-logBits))
		hi := math.Float64frombits(logOff + uint64(i+1)<<(52-logBits))
		inv := 2 / (lo + hi)
		if lo <= 1 && 1 <= hi {
			inv = 1 // exact r = z − 1 around 1
		}
		logInvC[i], logLogC[i] = inv, -math.Log(inv)
	}
}

// logSubnormal returns log y for a subnormal y > 0, scaled into the
// normal range first: math.Log on amd64 gives about −709.09 (log 2⁻¹⁰²³)
// for every subnormal, up to 35 off.
func logSubnormal(y float64) float64 { return math.Log(y*0x1p64) - 64*math.Ln2 }

// plogp returns Σ x·log x over x (0·log 0 = 0), the negated entropy of a
// distribution: eight lanes at a time with AVX-512, else from logs in
// blocks that stay in the first-level cache.
func plogp[F tensor.Float](x []F) float64 {
	s := 0.0
	if x32, ok := any(x).([]float32); ok && hasAVX512 && len(x) >= 8 {
		n := len(x) &^ 7
		s, _, _ = plogp32AVX512(&x32[0], n, &avxInvC[0], &avxLogC[0])
		x = x[n:]
	}
	var buf [512]float64
	for len(x) > 0 {
		n := min(len(x), len(buf))
		logs(buf[:n], x[:n])
		s += dot(x[:n], buf[:n])
		x = x[n:]
	}
	return s
}

// checkedPlogp returns Σ x·log x of a float32 distribution x of length
// vocab, reading it once to check it as checkDist does and to take the
// sum, when this build has the AVX-512 loop; ok is false when it has not,
// or when x fails a check (the caller then runs checkDist for the error).
// Its sum of x is formed in another order than checkDist's, which can move
// a sum within a few ulps of the tolerance to the other side.
func checkedPlogp[F tensor.Float](x []F, vocab int, sumTol float64) (s float64, ok bool) {
	x32, is32 := any(x).([]float32)
	if !hasAVX512 || !is32 || len(x) != vocab || len(x) < 8 {
		return 0, false
	}
	n := len(x) &^ 7
	s, sum, ok := plogp32AVX512(&x32[0], n, &avxInvC[0], &avxLogC[0])
	for _, p := range x32[n:] {
		if !(p >= 0) || !tensor.IsFinite(p) {
			return 0, false
		}
		sum += float64(p)
	}
	if !ok || math.Abs(sum-1) > sumTol {
		return 0, false
	}
	return s + plogp(x32[n:]), true
}

// logMean turns sum, a sum of m distributions, into the log of their mean
// in place: log(sum[v]/m), 0 where sum[v] is 0.
func logMean(sum []float64, m int) {
	if hasAVX512 && len(sum) >= 8 {
		n := len(sum) &^ 7
		logs64AVX512(&sum[0], &sum[0], n, 1/float64(m), &avxInvC[0], &avxLogC[0])
		sum = sum[n:]
	}
	for v := range sum {
		sum[v] /= float64(m)
	}
	logs(sum, sum)
}

// addTo adds x to dst entry by entry.
func addTo[F tensor.Float](dst []float64, x []F) {
	dst = dst[:len(x)]
	if x32, ok := any(x).([]float32); ok && hasAVX512 && len(x) >= 8 {
		n := len(x) &^ 7
		add32AVX512(&dst[0], &x32[0], n)
		dst, x = dst[n:], x[n:]
	}
	for v, p := range x {
		dst[v] += float64(p)
	}
}

// dot returns Σ x·y in float64: eight lanes at a time with AVX-512 for
// float32 x, else with four accumulators, which lets the additions
// overlap. The order is fixed, so the result is reproducible on a given
// machine.
func dot[F tensor.Float](x []F, y []float64) float64 {
	y = y[:len(x)]
	s := 0.0
	if x32, ok := any(x).([]float32); ok && hasAVX512 && len(x) >= 8 {
		n := len(x) &^ 7
		s = dot32AVX512(&x32[0], &y[0], n)
		x, y = x[n:], y[n:]
	}
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i]) * y[i]
		s1 += float64(x[i+1]) * y[i+1]
		s2 += float64(x[i+2]) * y[i+2]
		s3 += float64(x[i+3]) * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * y[i]
	}
	return s + (s0 + s1) + (s2 + s3)
}
