//go:build !purego

package appo

import (
	"math"

	"golang.org/x/sys/cpu"
)

// hasAVX512 reports whether plogp, logMean, dot and addTo run their
// AVX-512F loops (log_amd64.s); the purego build tag turns them off.
var hasAVX512 = cpu.X86.HasAVX512F

// avxInvC and avxLogC are the tables of the AVX-512 logarithm: bucket i of
// z ∈ [0.75, 1.5) holds the z whose bits minus those of 0.75, shifted right
// by 45, are i (64 buckets below 1, 64 above); 1/c of its centre, 1 for the
// two buckets next to 1, and −log of that inverse as rounded.
var avxInvC, avxLogC [logBuckets]float64

func init() {
	const off = 0x3fe8000000000000 // 0.75
	for i := range logBuckets {
		lo := math.Float64frombits(off + uint64(i)<<(52-logBits))
		hi := math.Float64frombits(off + uint64(i+1)<<(52-logBits))
		inv := 2 / (lo + hi)
		if lo <= 1 && 1 <= hi {
			inv = 1
		}
		avxInvC[i], avxLogC[i] = inv, -math.Log(inv)
	}
}

//go:noescape
func plogp32AVX512(x *float32, n int, inv, lg *float64) (s, sum float64, ok bool)

//go:noescape
func logs64AVX512(dst, x *float64, n int, scale float64, inv, lg *float64)

//go:noescape
func dot32AVX512(x *float32, y *float64, n int) float64

//go:noescape
func add32AVX512(dst *float64, x *float32, n int)
