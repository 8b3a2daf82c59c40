package replay

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/internal/stat"
	"github.com/rlpost/rlpost/tensor"
)

// AdvantageConfig configures Advantages.
type AdvantageConfig struct {
	// Eps is ε of the denominator σ_off + ε: 1e-6, as on-policy GRPO.
	Eps float64
}

// DefaultAdvantageConfig returns ε = 1e-6.
func DefaultAdvantageConfig() AdvantageConfig { return AdvantageConfig{Eps: 1e-6} }

// Validate reports whether Eps is a finite number ≥ 0.
func (c AdvantageConfig) Validate() error {
	if !(c.Eps >= 0) || math.IsInf(c.Eps, 1) {
		return tensor.Errorf(tensor.ErrRange, "AdvantageConfig.Eps", nil, "%v, want a finite number ≥ 0", c.Eps)
	}
	return nil
}

// AdvantageStats describe one off-policy batch.
type AdvantageStats struct {
	// N is the batch size.
	N int
	// MeanReward is the batch's mean reward and Std σ_off, the unbiased
	// standard deviation of its rewards.
	MeanReward, Std float64
	// Unscaled is true when σ_off = 0 (one experience, or equal rewards):
	// the advantages are then R − R̄(q), not divided by ε.
	Unscaled bool
	// Nonzero counts the advantages that are not 0.
	Nonzero int
}

// Advantages computes AVATAR's off-policy advantage (Eq. 11),
//
//	A_off,i = (R_i − R̄(q_i)) / (σ_off + ε),
//
// into dst, where rewards are the replayed experiences' R_i, baselines their
// prompts' VCRS R̄(q_i), and σ_off the unbiased (n − 1) standard deviation
// of the rewards of the batch. Unlike GRPO's group mean, R̄(q) does not
// move with the batch, so a batch of equal rewards still yields a signal
// wherever R differs from R̄(q); but its σ_off is 0, and dividing by ε
// alone would multiply R − R̄ by a million. In that case (and for a batch of
// one) the advantages are R − R̄(q), unscaled, and the stats say so.
//
// dst may be rewards or baselines itself. It allocates nothing; sums are in
// float64. On error the contents of dst are unspecified.
func Advantages[F tensor.Float](dst, rewards, baselines []F, cfg AdvantageConfig) (AdvantageStats, error) {
	if err := cfg.Validate(); err != nil {
		return AdvantageStats{}, fmt.Errorf("replay: %w", err)
	}
	n := len(rewards)
	if n == 0 {
		return AdvantageStats{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "rewards", nil, "no rewards"))
	}
	if len(baselines) != n {
		return AdvantageStats{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, "baselines", nil, "length %d, want %d like rewards", len(baselines), n))
	}
	if len(dst) != n {
		return AdvantageStats{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d like rewards", len(dst), n))
	}
	if err := tensor.CheckFiniteVec("rewards", rewards); err != nil {
		return AdvantageStats{}, fmt.Errorf("replay: %w", err)
	}
	if err := tensor.CheckFiniteVec("baselines", baselines); err != nil {
		return AdvantageStats{}, fmt.Errorf("replay: %w", err)
	}
	mean, ss := stat.Moments(rewards)
	st := AdvantageStats{N: n, MeanReward: mean}
	if n > 1 {
		st.Std = math.Sqrt(ss / float64(n-1))
	}
	if !isFinite(mean) || !isFinite(st.Std) {
		return AdvantageStats{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "rewards", nil, "mean %v and std %v overflow float64", mean, st.Std))
	}
	denom := st.Std + cfg.Eps
	if st.Std == 0 {
		st.Unscaled, denom = true, 1
	}
	for i := range n {
		a := (float64(rewards[i]) - float64(baselines[i])) / denom
		dst[i] = F(a)
		if !tensor.IsFinite(dst[i]) {
			return AdvantageStats{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "dst", tensor.At(i),
				"advantage (%v − %v)/%v overflows %T", float64(rewards[i]), float64(baselines[i]), denom, dst[i]))
		}
		if dst[i] != 0 {
			st.Nonzero++
		}
	}
	return st, nil
}
