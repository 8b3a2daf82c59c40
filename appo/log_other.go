//go:build !amd64 || purego

package appo

// hasAVX512 is false: this build has no AVX-512 loops.
const hasAVX512 = false

var avxInvC, avxLogC [logBuckets]float64

func plogp32AVX512(*float32, int, *float64, *float64) (float64, float64, bool) {
	panic("appo: no AVX-512")
}
func logs64AVX512(*float64, *float64, int, float64, *float64, *float64) { panic("appo: no AVX-512") }
func dot32AVX512(*float32, *float64, int) float64                       { panic("appo: no AVX-512") }
func add32AVX512(*float64, *float32, int)                               { panic("appo: no AVX-512") }
