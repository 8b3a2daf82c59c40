//go:build !amd64 || purego

package kernel

// HasAVX512 is false: this build has no AVX-512 kernels.
const HasAVX512 = false

// PolicyLanes is 0: this build has no policy kernel in assembly.
const PolicyLanes = 0

// RunLanes does nothing and returns false: this build has no policy kernel
// in assembly.
func (k *PolicyTokens) RunLanes(lanes int) bool { return false }

func countMaskAVX512(m []float32) int { return CountMaskGo(m) }
