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
func (e *estimate[F]) passK(s *span[F], m int, std float64) error {
	if e.cfg.K == 0 || e.cfg.K == m {
		return e.passAll(s, std)
	}
	if m <= passKStack {
		var stack [passKStack]float64
		_, err := e.passKSorted(stack[:0], s, m, std)
		return err
	}
	p := scratch.Get()
	sorted, err := e.passKSorted((*p)[:0], s, m, std)
	*p = sorted[:0]
	scratch.Put(p)
	return err
}

// passAll is passK for k = m, which needs only the two largest rewards,
// not the sorted group: A_i = R_i − R_second for the best response (0 on a
// tie for best), 0 for the others.
func (e *estimate[F]) passAll(s *span[F], std float64) error {
	// The two largest, with repeats, as order keys (orderKey): integer
	// max and min compile to conditional moves, where floating-point ones
	// (NaN and signed-zero rules) cost a chain of five instructions and a
	// comparison-and-branch would be a coin flip on random rewards.
	k1, k2 := int64(math.MinInt64), int64(math.MinInt64)
	if s.scored == nil {
		for _, v := range s.r {
			k := orderKey(float64(v))
			k2 = max(k2, min(k1, k))
			k1 = max(k1, k)
		}
	} else {
		for t, v := range s.r {
			if s.isScored(t) {
				k := orderKey(float64(v))
				k2 = max(k2, min(k1, k))
				k1 = max(k1, k)
			}
		}
	}
	if k2 == k1 {
		clear(s.d)
		return nil // a tie for best: every advantage is 0
	}
	best := 0
	if s.scored == nil {
		// The best is unique: the sum of t over the members with its key
		// is its index. Zeroing d in the same loop, without a branch.
		d := s.d[:len(s.r)]
		for t, v := range s.r {
			best += t * int(b2u(orderKey(float64(v)) == k1))
			d[t] = 0
		}
	} else {
		clear(s.d)
		for t, v := range s.r {
			if s.scored[t] && orderKey(float64(v)) == k1 {
				best = t
				break
			}
		}
	}
	first, second := fromOrderKey(k1), fromOrderKey(k2)
	a := (first - second) * e.passScale(std)
	s.d[best] = F(a)
	if !tensor.IsFinite(s.d[best]) {
		return overflow(s.index(best), a, e.cfg)
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
func (e *estimate[F]) passKSorted(sorted []float64, s *span[F], m int, std float64) ([]float64, error) {
	k := e.cfg.K
	if k == 0 {
		k = m
	}
	if k > m {
		return sorted, tensor.Errorf(tensor.ErrShape, "Config.K", nil, "%d, but a group has %d scored members", k, m)
	}
	sorted = slices.Grow(sorted, m)
	for t, v := range s.r {
		if s.isScored(t) {
			sorted = append(sorted, float64(v))
		}
	}
	slices.Sort(sorted)
	scale := e.passScale(std)
	for t, v := range s.r {
		if !s.isScored(t) {
			s.d[t] = 0
			continue
		}
		r := float64(v)
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
		s.d[t] = F(a)
		if !tensor.IsFinite(s.d[t]) {
			return sorted, overflow(s.index(t), a, e.cfg)
		}
	}
	return sorted, nil
}

// orderKey maps x to an integer in the same order (−0 just below +0):
// the bits of a non-negative float64 already are, and a negative one's
// magnitude bits are flipped so that larger magnitudes come lower.
func orderKey(x float64) int64 {
	b := int64(math.Float64bits(x))
	return b ^ (b >> 63 & math.MaxInt64)
}

// fromOrderKey inverts orderKey; math.MinInt64, no key of a number, is
// −Inf's stand-in for "none".
func fromOrderKey(k int64) float64 {
	if k == math.MinInt64 {
		return math.Inf(-1)
	}
	return math.Float64frombits(uint64(k ^ (k >> 63 & math.MaxInt64)))
}
