//go:build !purego

package appo

import (
	"math"

	"golang.org/x/sys/cpu"
)

// hasAVX512 reports whether the row and slot kernels run their AVX-512F
// loops (log_amd64.s); the purego build tag turns them off.
var hasAVX512 = cpu.X86.HasAVX512F

// avxLog is the table of the AVX-512 logarithm, whose layout the assembly
// reads. It takes x = 2^k·z with z ∈ [0.734375, 1.46875) and 16 buckets
// of z, cut at equal steps of z's bits shifted by half a step so that
// bucket 8 is centred on 1: buckets 0–7 are z ∈ 0.75 + [j − ½, j + ½)/32,
// bucket 8 is [1 − 1/64, 1 + 1/32), buckets 9–15 are 1 + [j − 8½, j − 7½)/16.
// Bucket j's index is (bits(z) − bits(0.734375)) >> 48, the top four bits
// of the difference, which VPERMI2PD turns into its entries without a
// gather. With c the bucket's centre (1 for bucket 8, so that log x keeps
// its relative accuracy near 1, where it is tiny),
//
//	log x = k·ln 2 + log c + log1p(r),  r = z·(1/c) − 1,  |r| ≤ 2⁻⁵,
//
// and the Taylor series of log1p through r¹⁰ leaves out less than
// |r|¹¹/11 < 2⁻⁵⁸. Its error against math.Log is within
// 1e-16 + 2.3e-16·|log x| like the scalar logs' (TestLogAccuracy).
//
// Entries: 0–15 1/c rounded, 16–31 −log of that rounded inverse (so that
// log z = log1p(z·(1/c) − 1) + entry whatever the rounding), 32–39 the
// series' coefficients of r³ … r¹⁰, then 1, ½, 1.46875, ln 2 in two parts,
// and 0.734375, whose bits are subtracted to find the bucket.
var avxLog [46]float64

func init() {
	for j := range 16 {
		c := 1 + float64(j-8)/16
		if j < 8 {
			c = 0.75 + float64(j)/32
		}
		inv := 1 / c
		avxLog[j], avxLog[16+j] = inv, -math.Log(inv)
	}
	for n := 3; n <= 10; n++ {
		avxLog[32+n-3] = 1 / float64(n)
		if n%2 == 0 {
			avxLog[32+n-3] = -1 / float64(n)
		}
	}
	copy(avxLog[40:], []float64{1, 0.5, 1.46875, ln2Hi, ln2Lo, 0.734375})
}

//go:noescape
func plogp32AVX512(x *float32, n int, next *float32, tab *float64) (s, sum, least float64)

//go:noescape
func sum32AVX512(x *float32, n int, next *float32) (sum, least float64)

//go:noescape
func logs64AVX512(dst, x *float64, n int, scale float64, tab *float64)

//go:noescape
func slot32AVX512(rows *[]float32, m, off, n int, acc *float64, scale float64, out *float64, tab *float64, next *[]float32, nextM int)
