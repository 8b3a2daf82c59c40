//go:build !amd64 || purego

package kernel

// HasAVX2 is false: this build has no AVX2 kernels.
const HasAVX2 = false

func expAVX2(dst, src []float64) { expGeneric(dst, src) }

// Run does nothing and returns false: this build has no AVX2 kernels.
func (k *PolicyTokens) Run() bool { return false }

func countMaskAVX2(m []float32) int { return CountMaskGo(m) }

func gaeTokens4AVX2(k *GAETokens4) {}
