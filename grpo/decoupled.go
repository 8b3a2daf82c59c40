package grpo

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// DecoupledAdvantages is GDPO's decoupled multi-reward normalisation
// ("GDPO: Group reward-Decoupled Normalization Policy Optimization for
// Multi-reward RL Optimization", arXiv 2601.05242; TRL
// multi_objective_aggregation "normalize_then_sum"): each of the K reward
// functions is normalised within its groups on its own, A_k =
// (r_k − mean_g r_k)/(std_g r_k + ε) (Advantages with cfg), the weighted sum
// s = Σ_k w_k·A_k is then normalised over the whole batch, (s − mean
// s)/(std s + ε). Summing the rewards first and normalising once (TRL's
// default "sum_then_normalize") lets a reward of wide spread drown the
// others; decoupling gives each the same scale within a group.
//
// rewards[k] holds reward function k for every completion (each of
// len(dst)); weights are w_k (nil: all 1, TRL's reward_weights). cfg must
// be the GRPO estimator with the group scale (ErrRange otherwise); its Std
// and Eps serve both normalisations (TRL: unbiased std, ε = 10⁻⁴,
// TRLDefaults), and a batch of one completion gets 0. dst may not overlap
// a reward slice (ErrOverlap). Stats count the groups; Vanishing counts
// the groups whose summed normalised rewards are all equal, MeanReward and
// StdReward describe s. It allocates nothing in steady state.
func DecoupledAdvantages[F tensor.Float](dst []F, rewards [][]F, weights []float64, g Groups, cfg Config) (Stats, error) {
	n := len(dst)
	bad := func(err error) (Stats, error) { return Stats{}, fmt.Errorf("grpo: %w", err) }
	switch {
	case cfg.Estimator != GRPO:
		return bad(tensor.Errorf(tensor.ErrRange, "Config.Estimator", nil, "%v: the decoupled normalisation is GRPO's", cfg.Estimator))
	case cfg.Scale != ScaleGroup:
		return bad(tensor.Errorf(tensor.ErrRange, "Config.Scale", nil, "%v: each reward is normalised within its group, then the sum over the batch", cfg.Scale))
	case len(rewards) == 0:
		return bad(tensor.Errorf(tensor.ErrEmpty, "rewards", nil, "no reward function"))
	case weights != nil && len(weights) != len(rewards):
		return bad(tensor.Errorf(tensor.ErrShape, "weights", nil, "%d weights for %d reward functions", len(weights), len(rewards)))
	case n == 0:
		return bad(tensor.Errorf(tensor.ErrEmpty, "dst", nil, "no completions"))
	}
	for k, w := range weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return bad(tensor.Errorf(tensor.ErrRange, "weights", tensor.At(k), "%v is not finite", w))
		}
	}
	for k, r := range rewards {
		if len(r) != n {
			return bad(tensor.Errorf(tensor.ErrShape, "rewards", tensor.At(k), "length %d, want %d (len(dst))", len(r), n))
		}
		if err := tensor.CheckDisjoint("dst", dst, "rewards", r); err != nil {
			return bad(err)
		}
	}
	tmp := getScratch[F](n)
	defer putScratch(tmp)
	clear(dst)
	var st Stats
	for k, r := range rewards {
		s, err := Advantages(*tmp, r, g, cfg)
		if err != nil {
			return Stats{}, fmt.Errorf("%w (reward function %d)", err, k)
		}
		if k == 0 {
			st.Groups, st.Singletons = s.Groups, s.Singletons
		}
		w := 1.0
		if weights != nil {
			w = weights[k]
		}
		for i, a := range *tmp {
			dst[i] = F(float64(dst[i]) + w*float64(a))
		}
	}
	for k := range st.Groups {
		lo, hi, idx := g.members(k)
		if groupEqual(dst, lo, hi, idx) && max(hi-lo, len(idx)) > 1 {
			st.Vanishing++
		}
	}
	if st.Groups > 0 {
		st.VanishingFrac = float64(st.Vanishing) / float64(st.Groups)
	}
	batch := cfg
	batch.Singleton = SingletonZero
	s, err := Advantages(dst, dst, Contiguous(n), batch)
	if err != nil {
		return Stats{}, fmt.Errorf("%w (the batch normalisation of the summed advantages)", err)
	}
	st.MeanReward, st.StdReward = s.MeanReward, s.StdReward
	return st, nil
}

// groupEqual reports whether the members of a group (the range [lo, hi),
// or idx) all hold the same value.
func groupEqual[F tensor.Float](x []F, lo, hi int, idx []int) bool {
	if idx != nil {
		for _, i := range idx {
			if x[i] != x[idx[0]] {
				return false
			}
		}
		return true
	}
	for _, v := range x[lo:hi] {
		if v != x[lo] {
			return false
		}
	}
	return true
}

// sums32 and sums64 recycle DecoupledAdvantages' buffer, one free list
// per storage type.
var (
	sums32 = parallel.NewFree[[]float32](4)
	sums64 = parallel.NewFree[[]float64](4)
)

func getScratch[F tensor.Float](n int) *[]F {
	var got any
	if unsafe.Sizeof(*new(F)) == 4 {
		got = sums32.Get()
	} else {
		got = sums64.Get()
	}
	s, ok := got.(*[]F)
	if !ok { // a named float type: a buffer of its own
		s = new([]F)
	}
	if cap(*s) < n {
		*s = make([]F, n)
	}
	*s = (*s)[:n]
	return s
}

func putScratch[F tensor.Float](s *[]F) {
	switch p := any(s).(type) {
	case *[]float32:
		sums32.Put(p)
	case *[]float64:
		sums64.Put(p)
	}
}
