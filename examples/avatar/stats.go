package main

import (
	"math"
	"math/rand/v2"
	"slices"
)

// median of x; +Inf values sort last.
func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	n := len(s)
	if math.IsInf(s[n/2], 1) {
		return math.Inf(1)
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// bootstrapIters is the paper's (Tables 2–3: 10 000 iterations, percentile
// method).
const bootstrapIters = 10000

// medianCI returns the median of x and the 95 % percentile-bootstrap
// interval of the median over resamples of x (seeds), drawn from a
// generator seeded with key so that the table repeats.
func medianCI(x []float64, key uint64) (m, lo, hi float64) {
	m = median(x)
	if len(x) < 2 {
		return m, m, m
	}
	rng := rand.New(rand.NewPCG(key, 0xb007))
	ms := make([]float64, bootstrapIters)
	r := make([]float64, len(x))
	for i := range ms {
		for j := range r {
			r[j] = x[rng.IntN(len(x))]
		}
		ms[i] = median(r)
	}
	slices.Sort(ms)
	return m, ms[int(0.025*bootstrapIters)], ms[int(0.975*bootstrapIters)-1]
}
