package rewards_test

import (
	"math"
	"testing"

	"github.com/rlpost/rlpost/rewards"
)

// V-Triune §3.2: the reward is α_acc·R_acc + α_format·R_format, not divided
// by the weights' sum.
func TestCombineIsVTriuneSum(t *testing.T) {
	s := rewards.DefaultRouteSpec() // α_acc 1, α_format 0.1
	for _, c := range []struct{ acc, format, sum, mean float64 }{
		{1, 1, 1.1, 1},
		{0.8, 1, 0.9, 0.9 / 1.1},
		{0, 0.5, 0.05, 0.05 / 1.1},
	} {
		if got := s.Combine(c.acc, c.format); math.Abs(got-c.sum) > 1e-15 {
			t.Errorf("Combine(%v, %v) = %v, want %v", c.acc, c.format, got, c.sum)
		}
		if got := s.CombineNormalized(c.acc, c.format); math.Abs(got-c.mean) > 1e-15 {
			t.Errorf("CombineNormalized(%v, %v) = %v, want %v", c.acc, c.format, got, c.mean)
		}
	}
	s.AccuracyRatio, s.FormatRatio = 0.9, 0.1
	if got := s.Combine(0.5, 1); math.Abs(got-0.55) > 1e-15 {
		t.Errorf("weights summing to 1: Combine = %v, want 0.55 (both forms agree)", got)
	}
}
