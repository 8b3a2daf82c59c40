package rewards_test

import (
	"testing"

	"github.com/rlpost/rlpost/rewards"
	"github.com/stretchr/testify/assert"
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
		assert.InDelta(t, c.sum, s.Combine(c.acc, c.format), 1e-15, "Combine(%v, %v)", c.acc, c.format)
		assert.InDelta(t, c.mean, s.CombineNormalized(c.acc, c.format), 1e-15, "CombineNormalized(%v, %v)", c.acc, c.format)
	}
	s.AccuracyRatio, s.FormatRatio = 0.9, 0.1
	assert.InDelta(t, 0.55, s.Combine(0.5, 1), 1e-15, "weights summing to 1: Combine, want 0.55 (both forms agree)")
}
