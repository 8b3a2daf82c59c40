package grpo

import (
	"math"
	"slices"

	"github.com/rlpost/rlpost/tensor"
)

// passKStack is the largest group PassK sorts in a stack array.
const passKStack = 64

// passK writes the pass@k advantages of one group of m ≥ 2 scored members
// whose rewards are not all equal (docs/spec.md#group-advantages):
//
//	A_i = E_T[max(R_i − max(T), 0)],
//
// T a uniformly random set of k − 1 of the group's other m − 1 rewards:
// how much response i raises the maximum of k responses over the k − 1
// others it is drawn with. With the others sorted ascending, o_1 ≤ … ≤
// o_{m−1}, max(T) = o_j with probability P_j = C(j−1, k−2)/C(m−1, k−1),
// j = k−1 … m−1. For k = m only the best response gets a nonzero value,
// R_max − R_second (verl's grpo_passk). Then scaled as GRPO is (Config.Scale).
func (e *estimate[F]) passK(lo int, idx []int, size, m int, std float64) error {
	if e.cfg.K == 0 || e.cfg.K == m {
		return e.passAll(lo, idx, size, std)
	}
	if m <= passKStack {
		var stack [passKStack]float64
		_, err := e.passKSorted(stack[:0], lo, idx, size, m, std)
		return err
	}
	p := scratch.Get()
	sorted, err := e.passKSorted((*p)[:0], lo, idx, size, m, std)
	*p = sorted[:0]
	scratch.Put(p)
	return err
}

// passAll is passK for k = m, which needs only the two largest rewards,
// not the sorted group: A_i = R_i − R_second for the best response (0 on a
// tie for best), 0 for the others.
func (e *estimate[F]) passAll(lo int, idx []int, size int, std float64) error {
	first, second := math.Inf(-1), math.Inf(-1) // the two largest, with repeats
	for t := range size {
		if i := at(lo, idx, t); e.scored(i) {
			r := float64(e.r[i])
			if r > first {
				first, second = r, first
			} else if r > second {
				second = r
			}
		}
	}
	scale := e.passScale(std)
	for t := range size {
		i := at(lo, idx, t)
		var a float64
		if r := float64(e.r[i]); e.scored(i) && r == first && second < r {
			a = (r - second) * scale
		}
		e.dst[i] = F(a)
		if !tensor.IsFinite(e.dst[i]) {
			return overflow(i, a, e.cfg)
		}
	}
	return nil
}

// passScale is the factor pass@k advantages are scaled by (Config.Scale).
func (e *estimate[F]) passScale(std float64) float64 {
	switch e.cfg.Scale {
	case ScaleGroup:
		return 1 / (std + e.cfg.Eps)
	case ScaleBatch:
		return 1 / (e.batchStd + e.cfg.Eps)
	}
	return 1
}

// passKSorted is passK with sorted as the buffer for the group's sorted
// rewards; it returns the buffer, grown to hold them.
func (e *estimate[F]) passKSorted(sorted []float64, lo int, idx []int, size, m int, std float64) ([]float64, error) {
	k := e.cfg.K
	if k == 0 {
		k = m
	}
	if k > m {
		return sorted, tensor.Errorf(tensor.ErrShape, "Config.K", nil, "%d, but a group has %d scored members", k, m)
	}
	sorted = slices.Grow(sorted, m)
	for t := range size {
		if i := at(lo, idx, t); e.scored(i) {
			sorted = append(sorted, float64(e.r[i]))
		}
	}
	slices.Sort(sorted)
	scale := e.passScale(std)
	for t := range size {
		i := at(lo, idx, t)
		if !e.scored(i) {
			e.dst[i] = 0
			continue
		}
		r := float64(e.r[i])
		// The others are sorted without one copy of r; their j-th
		// (1-based) is sorted[j−1] when that is below r, and otherwise
		// at least r, adding nothing: no search for r is needed.
		var a float64
		p := float64(k-1) / float64(m-1) // P_{m−1}
		for j := m - 1; j >= k-1; j-- {
			if o := sorted[j-1]; o < r {
				a += p * (r - o)
			}
			if j > 1 {
				p *= float64(j-k+1) / float64(j-1)
			}
		}
		a *= scale
		e.dst[i] = F(a)
		if !tensor.IsFinite(e.dst[i]) {
			return sorted, overflow(i, a, e.cfg)
		}
	}
	return sorted, nil
}
