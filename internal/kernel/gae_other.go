//go:build !amd64 || purego

package kernel

// HasAVX512 is false: this build has no AVX-512 kernels.
const HasAVX512 = false

func gaeRows8AVX512(k *GAERows8) {}

func biLevelRows8AVX512(k *BiLevelRows8) {}
