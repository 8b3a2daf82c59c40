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
// distribution, from logs in blocks that stay in the first-level cache.
func plogp[F tensor.Float](x []F) float64 {
	s := 0.0
	var buf [512]float64
	for len(x) > 0 {
		n := min(len(x), len(buf))
		logs(buf[:n], x[:n])
		s += dot(x[:n], buf[:n])
		x = x[n:]
	}
	return s
}

// rowSums returns Σ x·log x (when withLogs; else 0) and Σ x of a block x
// of a distribution, reading it once: the row kernel of the blocked pass.
// sum is NaN when some x is negative or not finite, so that the check of
// the row's total against 1 fails for it whatever Config.SumTol is. On
// float32 with AVX-512 it runs eight lanes at a time and prefetches next,
// the block the caller reads next, at least as long as x.
func rowSums[F tensor.Float](x, next []F, withLogs bool) (s, sum float64) {
	if x32, ok := any(x).([]float32); ok && hasAVX512 && len(x) >= 8 {
		n := len(x) &^ 7
		next32 := any(next).([]float32)[:n]
		var least float64
		if withLogs {
			s, sum, least = plogp32AVX512(&x32[0], n, &next32[0], &avxLog[0])
		} else {
			sum, least = sum32AVX512(&x32[0], n, &next32[0])
		}
		if !(least >= 0) || math.IsInf(sum, 0) {
			sum = math.NaN()
		}
		x = x[n:]
	}
	if withLogs {
		s += plogp(x)
	}
	for _, p := range x {
		if !(p >= 0) || !tensor.IsFinite(p) {
			sum = math.NaN()
		}
		sum += float64(p)
	}
	return s, sum
}

// slotBlock runs one slot on words [lo, hi) of the vocabulary, the slot
// kernel of the blocked pass: with p_e = members[e][lo:hi], it sets
// acc = log p̄ = log(Σ_e p_e / m) (0 where p̄ is 0) and adds Σ p_e·log p̄
// to out[e], for the m = len(members) ≥ 1 members. acc has room for
// hi − lo words. On float32 with AVX-512 one call of the assembly does
// all of it for the words up to a multiple of eight, reading each member's
// block from memory once, and prefetches the same words of next, the
// members of the slot the caller runs next (nil if none).
func slotBlock[F tensor.Float](acc []float64, members [][]F, lo, hi int, out []float64, next [][]F) {
	m, n := len(members), 0
	if m32, ok := any(members).([][]float32); ok && hasAVX512 && hi-lo >= 8 {
		n = (hi - lo) &^ 7
		next32 := any(next).([][]float32)
		var first *[]float32
		if len(next32) > 0 {
			first = &next32[0]
		}
		slot32AVX512(&m32[0], m, lo, n, &acc[0], 1/float64(m), &out[0], &avxLog[0], first, len(next32))
	}
	if lo+n == hi {
		return
	}
	tail := acc[n : hi-lo]
	clear(tail)
	for _, p := range members {
		addTo(tail, p[lo+n:hi])
	}
	// p̄_v = 0 only where every member has p_v = 0, and those terms are
	// 0·log 0 = 0: logMean writes 0 there.
	logMean(tail, m)
	for e, p := range members {
		out[e] += dot(p[lo+n:hi], tail)
	}
}

// logMean turns sum, a sum of m distributions, into the log of their mean
// in place: log(sum[v]/m), 0 where sum[v] is 0.
func logMean(sum []float64, m int) {
	if hasAVX512 && len(sum) >= 8 {
		n := len(sum) &^ 7
		logs64AVX512(&sum[0], &sum[0], n, 1/float64(m), &avxLog[0])
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
	for v, p := range x {
		dst[v] += float64(p)
	}
}

// dot returns Σ x·y in float64 with four accumulators, which lets the
// additions overlap. The order is fixed, so the result is reproducible.
func dot[F tensor.Float](x []F, y []float64) float64 {
	y = y[:len(x)]
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
	return (s0 + s1) + (s2 + s3)
}
