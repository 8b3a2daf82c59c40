//go:build !amd64 || purego

package kernel

func gaeRows8AVX512(k *GAERows8) {}

func biLevelRows8AVX512(k *BiLevelRows8) {}
