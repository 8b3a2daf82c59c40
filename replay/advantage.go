package replay

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/internal/stat"
	"github.com/rlpost/rlpost/tensor"
)

// DefaultStdFloor is the value rlpost suggests for the StdFloor guard, in
// reward units; the paper (and DefaultAdvantageConfig) has no floor. A batch
// of n ≤ 100 rewards in {0, 1} that are not all equal has σ_off ≥ √(1/n) ≥
// 0.1, so for binary rewards this floor leaves Eq. 11 exactly as the paper
// writes it except where σ_off would be 0 (every replayed reward equal), and
// there it bounds |A_off| by 10·|R − R̄| ≤ 10.
const DefaultStdFloor = 0.1

// AdvantageConfig configures Advantages.
type AdvantageConfig struct {
	// Eps is ε of the denominator σ_off + ε (max(σ_off, StdFloor) + ε with
	// the guard): DefaultAdvantageConfig sets 1e-6, as on-policy GRPO; 0
	// (the zero value) is Eq. 11 as written, with no ε, and a batch of
	// equal rewards then divides by 0, which Advantages reports as an
	// error.
	Eps float64
	// StdFloor is a guard, off by default (0: Eq. 11 as the paper writes
	// it). When > 0, σ_off is raised to at least StdFloor, in the rewards'
	// units, so that |A_off| ≤ |R − R̄|/StdFloor however small the batch's
	// spread — as written, Eq. 11 multiplies R − R̄ by up to 1/ε when the
	// replayed rewards are (nearly) all equal. DefaultStdFloor is the value
	// rlpost suggests for rewards in [0, 1]; a caller whose rewards span
	// more or less scales it with them.
	StdFloor float64
}

// DefaultAdvantageConfig returns Eq. 11 as AVATAR writes it, with ε = 1e-6
// and no floor.
func DefaultAdvantageConfig() AdvantageConfig {
	return AdvantageConfig{Eps: 1e-6}
}

// Validate reports whether Eps and StdFloor are finite numbers ≥ 0.
func (c AdvantageConfig) Validate() error {
	if !(c.Eps >= 0) || math.IsInf(c.Eps, 1) {
		return tensor.Errorf(tensor.ErrRange, "AdvantageConfig.Eps", nil, "%v, want a finite number ≥ 0", c.Eps)
	}
	if !(c.StdFloor >= 0) || math.IsInf(c.StdFloor, 1) {
		return tensor.Errorf(tensor.ErrRange, "AdvantageConfig.StdFloor", nil, "%v, want a finite number ≥ 0 (0 is off)", c.StdFloor)
	}
	return nil
}

// AdvantageStats describe one off-policy batch.
type AdvantageStats struct {
	// N is the batch size.
	N int
	// MeanReward is the batch's mean reward and Std σ_off, the unbiased
	// standard deviation of its rewards (0 for a batch of one).
	MeanReward, Std float64
	// Floored is true when the StdFloor guard is on and σ_off < StdFloor,
	// so that the floor, not σ_off, divided R − R̄ (a batch of one or of
	// equal rewards, say).
	Floored bool
	// Nonzero counts the advantages that are not 0.
	Nonzero int
}

// Advantages computes AVATAR's off-policy advantage (Eq. 11),
//
//	A_off,i = (R_i − R̄(q_i)) / (σ_off + ε),
//
// into dst, where rewards are the replayed experiences' R_i, baselines their
// prompts' VCRS R̄(q_i) and σ_off the unbiased (n − 1) standard deviation of
// the rewards of the batch. Unlike GRPO's group mean, R̄(q) does not move
// with the batch, so a batch of equal rewards still yields a signal wherever
// R differs from R̄(q) — but as its spread σ_off goes to 0, Eq. 11 as written
// grows without bound (a batch of near-equal rewards 1e-3 apart multiplies
// R − R̄ by a thousand). cfg.StdFloor = σ_min > 0 is the guard: the
// denominator becomes max(σ_off, σ_min) + ε, continuous in σ_off, equal to
// Eq. 11 whenever σ_off ≥ σ_min, and |A_off| ≤ |R − R̄|/σ_min otherwise. The
// stats say when the floor was used. With ε = 0, no floor and all rewards
// equal, the denominator is 0 and Advantages returns an ErrRange error.
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
	sigma := st.Std
	if f := cfg.StdFloor; sigma < f {
		st.Floored, sigma = true, f
	}
	denom := sigma + cfg.Eps
	if denom == 0 {
		return AdvantageStats{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "rewards", nil,
			"σ_off + ε is 0 (every reward equal, ε = 0, no StdFloor): Eq. 11 is undefined; set Eps or StdFloor"))
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
