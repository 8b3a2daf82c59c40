package grpo_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
)

// TestVerlEstimatorsByHand pins verl's two departures on values worked by
// hand, which verl's compute_rloo_outcome_advantage and
// compute_reinforce_plus_plus_outcome_advantage (b178a3c) print too.
func TestVerlEstimatorsByHand(t *testing.T) {
	// RLOO, one group 1, 0, 0: R_i − mean of the others = 1, −½, −½, and
	// verl divides by no std, whatever norm_adv_by_std_in_grpo says.
	r := []float64{1, 0, 0}
	cfg := grpo.VerlEstimator(grpo.VerlDefaults(), grpo.RLOO)
	require.Equal(t, grpo.ScaleNone, cfg.Scale)
	got, _ := advWith(t, r, grpo.Contiguous(3), cfg, grpo.Inputs[float64]{})
	require.InDeltaSlice(t, []float64{1, -0.5, -0.5}, got, 1e-15)
	cfg.Scale = grpo.ScaleGroup // rlpost's RLOO under the group std, std = 1/√3
	got, _ = advWith(t, r, grpo.Contiguous(3), cfg, grpo.Inputs[float64]{})
	require.InDelta(t, 1/(1/math.Sqrt(3)+1e-6), got[0], 1e-12)
	// The other estimators keep the preset as it is.
	require.Equal(t, grpo.VerlDefaults(), grpo.VerlEstimator(grpo.VerlDefaults(), grpo.GRPO))

	// REINFORCE++ on one response of reward 1 and length 5: its five
	// tokens carry 1 and whiten to exactly 0 in the paper's form. verl's
	// masked_mean divides by 5 + 10⁻⁸: d = 1 − 5/(5 + ε) (≈ ε/5, as
	// rounded in float64, which verl's value carries too), the unbiased
	// variance 5d²/(5 + ε)·5/4, and the advantage d/sqrt(var + 10⁻⁸) =
	// 1.9999999429…·10⁻⁵, verl's printed value.
	in := grpo.Inputs[float64]{Lengths: []int{5}}
	one := []float64{1}
	cfg = grpo.Config{Estimator: grpo.ReinforcePlusPlus}
	got, _ = advWith(t, one, grpo.Contiguous(1), cfg, in)
	require.Equal(t, 0.0, got[0])
	cfg = grpo.VerlEstimator(grpo.VerlDefaults(), grpo.ReinforcePlusPlus)
	require.Equal(t, 1e-8, cfg.WhitenMeanEps)
	got, _ = advWith(t, one, grpo.Contiguous(1), cfg, in)
	eps := 1e-8 // a variable: Go would evaluate the constant expression exactly
	d := 1 - 5/(5+eps)
	want := d / math.Sqrt(5*d*d/(5+eps)*5/4+1e-8)
	require.InDelta(t, want, got[0], 1e-18)
	require.InDelta(t, 1.9999999429361373e-05, got[0], 1e-15)
}

func TestWhitenMeanEpsRejects(t *testing.T) {
	for _, eps := range []float64{-1e-8, math.Inf(1), math.NaN()} {
		cfg := grpo.Config{Estimator: grpo.ReinforcePlusPlus, WhitenMeanEps: eps}
		err := cfg.Validate()
		require.ErrorIs(t, err, tensor.ErrRange, "%v", eps)
		require.ErrorContains(t, err, "WhitenMeanEps")
	}
}
