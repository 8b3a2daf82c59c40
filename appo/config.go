package appo

import (
	"math"

	"github.com/rlpost/rlpost/internal/enum"
	"github.com/rlpost/rlpost/tensor"
)

// Strategy picks the target frames ψ′ from ψS1, the frames the high-reward
// responses look at, and ψS2, those of the low-reward responses (APPO,
// arXiv 2602.23823, §3.2, after Eq. 8).
type Strategy int

const (
	// Soft: ψ′ = ψS1. The default; best in the paper's ablation
	// (supplementary §9, Table E).
	Soft Strategy = iota
	// Hard: ψ′ = ψS1 ∖ ψS2, frames only the high-reward responses look at.
	Hard
	// All: ψ′ = ψS1 ∪ ψS2.
	All
)

var strategyNames = [...]string{"soft", "hard", "all"}

func (s Strategy) String() string { return enum.Name(strategyNames[:], int(s), "Strategy") }

// ParseStrategy returns the Strategy named "soft", "hard" or "all".
func ParseStrategy(s string) (Strategy, error) {
	i, err := enum.Parse(strategyNames[:], s, "appo", "strategy")
	return Strategy(i), err
}

// Config holds APPO's knobs. No official implementation exists, so none has
// a verl or TRL name; the names are the paper's.
type Config struct {
	// Tau is the reward threshold τ of Eq. 3: responses with r ≥ τ form S1,
	// the others S2. The paper applies it to the accuracy reward; 0.5.
	Tau float64
	// K1 is the number of tokens whose attention to a frame is averaged
	// into the response's focus on that frame (Eq. 5–6); 15.
	K1 int
	// K2 is the number of frames each response focuses on (Eq. 7). The
	// paper gives two values: Algorithm 1 (line 5) sets K1, K2, K3 to
	// "e.g., 15, 5, 64", and the ablation (§4.5, Fig. 6(b)) finds an
	// optimum at K2 = 3, fewer frames missing important ones and more
	// adding frame noise. The default is Algorithm 1's 5; set 3 for the
	// ablation's best (presets.APPO reports both).
	K2 int
	// K3 is the number of tokens each response contributes to the group of
	// a target frame (Eq. 10); 64.
	K3 int
	// Alpha is α of Eq. 12, the strength of the reweighting; 1.7 (best in
	// the ablation). The weights lie in [1, 1 + α].
	Alpha float64
	// Strategy picks the target frames; Soft.
	Strategy Strategy
	// SumTol is how far the sum of a next-token distribution may be from 1.
	// Distributions are used as given, never renormalised, so a source
	// that returns unnormalised rows is an error rather than a silent
	// distortion of the KL terms. The default 1e-3 admits probabilities
	// rounded to bfloat16 (relative error 2⁻⁸ each, which largely cancels
	// over a vocabulary) and rejects truncated top-k rows that were not
	// renormalised. math.Inf(1) turns the check off.
	SumTol float64
}

// DefaultConfig returns the paper's defaults: τ = 0.5 (§4.1), K1 = 15,
// K2 = 5 and K3 = 64 (Algorithm 1's example; the K2 ablation's best is 3,
// §4.5), α = 1.7 (best of the ablation, §4.5), Soft (Table E); SumTol
// 1e-3.
func DefaultConfig() Config {
	return Config{Tau: 0.5, K1: 15, K2: 5, K3: 64, Alpha: 1.7, Strategy: Soft, SumTol: 1e-3}
}

// Validate reports the first field of c that is out of its domain.
func (c Config) Validate() error {
	switch {
	case c == Config{}:
		return tensor.Errorf(tensor.ErrRange, "Config", nil, "the zero value (K1 = K2 = K3 = 0); start from appo.DefaultConfig()")
	case math.IsNaN(c.Tau) || math.IsInf(c.Tau, 0):
		return tensor.Errorf(tensor.ErrRange, "Config.Tau", nil, "%v, want a finite number", c.Tau)
	case c.K1 < 1:
		return tensor.Errorf(tensor.ErrRange, "Config.K1", nil, "%d, want ≥ 1", c.K1)
	case c.K2 < 1:
		return tensor.Errorf(tensor.ErrRange, "Config.K2", nil, "%d, want ≥ 1", c.K2)
	case c.K3 < 1:
		return tensor.Errorf(tensor.ErrRange, "Config.K3", nil, "%d, want ≥ 1", c.K3)
	case !(c.Alpha >= 0) || math.IsInf(c.Alpha, 1):
		return tensor.Errorf(tensor.ErrRange, "Config.Alpha", nil, "%v, want a finite number ≥ 0", c.Alpha)
	case c.Strategy < Soft || c.Strategy > All:
		return tensor.Errorf(tensor.ErrRange, "Config.Strategy", nil, "%d is not a Strategy", int(c.Strategy))
	case !(c.SumTol >= 0):
		return tensor.Errorf(tensor.ErrRange, "Config.SumTol", nil, "%v, want ≥ 0", c.SumTol)
	}
	return nil
}
