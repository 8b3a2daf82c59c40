//go:build !amd64 || purego

package appo

// hasAVX512 is false: this build has no AVX-512 loops.
const hasAVX512 = false

var avxLog [46]float64

func plogp32AVX512(*float32, int, *float32, *float64) (float64, float64, float64) {
	panic("appo: no AVX-512")
}
func sum32AVX512(*float32, int, *float32) (float64, float64)  { panic("appo: no AVX-512") }
func logs64AVX512(*float64, *float64, int, float64, *float64) { panic("appo: no AVX-512") }
func slot32AVX512(*[]float32, int, int, int, *float64, float64, *float64, *float64, *[]float32, int) {
	panic("appo: no AVX-512")
}
