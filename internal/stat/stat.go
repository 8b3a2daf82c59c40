// Package stat holds the summary statistics several rlpost packages take of
// a vector of rewards, computed one way so that they agree to the bit.
package stat

import "github.com/rlpost/rlpost/tensor"

// Moments returns the mean of x and the sum of squared deviations from it
// (so the variance is ss/n, or ss/(n−1) unbiased), in two float64 passes
// with four accumulators each: independent chains of additions, which the
// processor overlaps, combined in a fixed order. x must not be empty. A
// NaN or infinity in x makes the mean non-finite.
func Moments[F tensor.Float](x []F) (mean, ss float64) {
	var s [4]float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s[0] += float64(x[i])
		s[1] += float64(x[i+1])
		s[2] += float64(x[i+2])
		s[3] += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s[0] += float64(x[i])
	}
	mean = ((s[0] + s[1]) + (s[2] + s[3])) / float64(len(x))
	var q [4]float64
	i = 0
	for ; i+4 <= len(x); i += 4 {
		d0, d1, d2, d3 := float64(x[i])-mean, float64(x[i+1])-mean, float64(x[i+2])-mean, float64(x[i+3])-mean
		q[0] += d0 * d0
		q[1] += d1 * d1
		q[2] += d2 * d2
		q[3] += d3 * d3
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - mean
		q[0] += d * d
	}
	return mean, (q[0] + q[1]) + (q[2] + q[3])
}
