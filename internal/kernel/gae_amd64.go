//go:build !purego

package kernel

import "golang.org/x/sys/cpu"

// HasAVX512 reports whether this build and processor run the AVX-512
// kernels of eight rows at a time (AVX-512 F, VL and DQ, and the AVX2
// kernels' features; the purego build tag turns them off).
var HasAVX512 = HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ

//go:noescape
func gaeRows8AVX512(k *GAERows8)

//go:noescape
func biLevelRows8AVX512(k *BiLevelRows8)
