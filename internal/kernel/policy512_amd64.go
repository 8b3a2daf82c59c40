//go:build !purego

package kernel

import "golang.org/x/sys/cpu"

// HasAVX512 reports whether this build and processor run the AVX-512
// kernels (the sixteen-lane policy kernel and mask count, the eight-row GAE
// and Bi-Level GAE kernels): the AVX2 kernels' features
// plus AVX-512 F (512-bit registers, mask registers), VL (its encoding on
// the 256-bit registers 16–31 that hold the sums) and BW (the 32-bit mask
// moves of the mask count), and DQ, which every processor with BW has, as
// the processor and the operating system both support them. The purego
// build tag turns it off.
var HasAVX512 = HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW

// PolicyLanes is how many float32 lanes the widest policy kernel this build
// and processor run has: 16 with AVX-512, 8 with AVX2, 0 without either.
var PolicyLanes = policyLanes()

func policyLanes() int {
	switch {
	case HasAVX512:
		return 16
	case HasAVX2:
		return 8
	}
	return 0
}

// exp32AVX512 is exp32AVX2 sixteen lanes at a time; len(src) must be a
// multiple of 16 and len(dst) ≥ len(src).
//
//go:noescape
func exp32AVX512(dst, src []float32)

//go:noescape
func policyTokensAVX512(k *PolicyTokens)

// countMaskAVX512 is countMaskAVX2 sixteen entries at a time; len(m) must
// be a multiple of 16.
//
//go:noescape
func countMaskAVX512(m []float32) int

// RunLanes runs the token-level policy-loss kernel of the given width, 16
// (AVX-512) or 8 (AVX2), on the first k.N &^ 7 tokens and reports whether
// it ran; for any other width, or one the processor lacks, it does nothing
// and returns false. Both widths give the same bits. Run is RunLanes(8).
func (k *PolicyTokens) RunLanes(lanes int) bool {
	switch {
	case lanes == 16 && HasAVX512:
		policyTokensAVX512(k)
	case lanes == 8 && HasAVX2:
		policyTokensAVX2(k)
	default:
		return false
	}
	return true
}
