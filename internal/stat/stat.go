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
	// The accumulators are plain locals and each step reads a four-element
	// slice, so that they stay in registers and the loop has no bounds
	// checks (an array of four accumulators lived in memory).
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		s0 += float64(q[0])
		s1 += float64(q[1])
		s2 += float64(q[2])
		s3 += float64(q[3])
	}
	for _, v := range x[i:] {
		s0 += float64(v)
	}
	mean = ((s0 + s1) + (s2 + s3)) / float64(len(x))
	var q0, q1, q2, q3 float64
	i = 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		d0, d1, d2, d3 := float64(q[0])-mean, float64(q[1])-mean, float64(q[2])-mean, float64(q[3])-mean
		q0 += d0 * d0
		q1 += d1 * d1
		q2 += d2 * d2
		q3 += d3 * d3
	}
	for _, v := range x[i:] {
		d := float64(v) - mean
		q0 += d * d
	}
	return mean, (q0 + q1) + (q2 + q3)
}

// Summary is the weight, mean and spread of a piece of a sample: W the
// total weight (the count, unweighted), Mean the weighted mean and M2 the
// weighted sum of squared deviations from it. Summaries of fixed pieces
// combined in a fixed order give the moments of the whole sample with the
// same bits however many goroutines formed the pieces: this is how the
// parallel ops take batch statistics.
type Summary struct {
	W, Mean, M2 float64
}

// Combine returns the summary of the pieces' samples together, by the
// decomposition of the sum of squares into its parts within and between
// the pieces (the many-piece form of the update in Chan, Golub and LeVeque,
// "Updating formulae and a pairwise algorithm for computing sample
// variances", 1979, eq. 2.1):
//
//	W = Σ W_p,  mean = Σ W_p·mean_p / W,  M2 = Σ M2_p + Σ W_p·(mean_p − mean)².
//
// Each sum runs in the order of parts. Pieces with W = 0 add nothing; all
// of them empty give the zero Summary.
func Combine(parts []Summary) Summary {
	var w, s float64
	for _, p := range parts {
		w += p.W
		s += p.W * p.Mean
	}
	if w == 0 {
		return Summary{}
	}
	mean := s / w
	var m2 float64
	for _, p := range parts {
		d := p.Mean - mean
		m2 += p.M2 + p.W*d*d // 0 for an empty piece
	}
	return Summary{W: w, Mean: mean, M2: m2}
}
