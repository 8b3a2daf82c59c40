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
// relative to its size where log x is close to 0. Subnormal x take
// math.Log.
func logs[F tensor.Float](dst []float64, x []F) {
	dst = dst[:len(x)]
	for i, v := range x {
		y := float64(v)
		iy := math.Float64bits(y)
		if iy-minNormal >= maxFinite-minNormal+1 {
			dst[i] = 0
			if y > 0 {
				dst[i] = math.Log(y) // subnormal
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

// plogp returns Σ x·log x over x (0·log 0 = 0), the negated entropy of a
// distribution, from logs in blocks that stay in the first-level cache.
func plogp[F tensor.Float](x []F) float64 {
	var buf [512]float64
	s := 0.0
	for len(x) > 0 {
		n := min(len(x), len(buf))
		logs(buf[:n], x[:n])
		s += dot(x[:n], buf[:n])
		x = x[n:]
	}
	return s
}
