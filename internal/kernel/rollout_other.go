//go:build !amd64 || purego

package kernel

// Run does nothing and returns false: this build has no AVX2 kernels.
func (k *RolloutTokens) Run() bool { return false }
