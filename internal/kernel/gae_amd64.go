//go:build !purego

package kernel

//go:noescape
func gaeRows8AVX512(k *GAERows8)

//go:noescape
func biLevelRows8AVX512(k *BiLevelRows8)
