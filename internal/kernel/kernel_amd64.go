//go:build !purego

package kernel

import "golang.org/x/sys/cpu"

// HasAVX2 reports whether this build and processor run the AVX2 kernels
// (AVX2 and FMA present; the purego build tag turns them off).
var HasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasPOPCNT

// expAVX2 sets dst[i] = e^src[i] four at a time; len(src) must be a
// multiple of 4 and len(dst) ≥ len(src).
//
//go:noescape
func expAVX2(dst, src []float64)

// exp32AVX2 sets dst[i] = e^src[i] in float32, eight at a time, with the
// policy kernel's exponential; len(src) must be a multiple of 8 and
// len(dst) ≥ len(src).
//
//go:noescape
func exp32AVX2(dst, src []float32)

//go:noescape
func policyTokensAVX2(k *PolicyTokens)

//go:noescape
func gaeTokens4AVX2(k *GAETokens4)

//go:noescape
func countMaskAVX2(m []float32) int

// Run runs the AVX2 token-level policy-loss kernel on the first k.N &^ 7
// tokens and reports whether it ran; without AVX2 it does nothing
// and returns false.
func (k *PolicyTokens) Run() bool {
	if !HasAVX2 {
		return false
	}
	policyTokensAVX2(k)
	return true
}
