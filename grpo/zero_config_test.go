package grpo_test

import (
	"errors"
	"math"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZeroConfigIsPaperGRPO: the zero Config is the GRPO paper's estimator
// as printed, (r − mean)/std with the unbiased std and no ε; a group of
// equal rewards still gets 0, not NaN.
func TestZeroConfigIsPaperGRPO(t *testing.T) {
	require.NoError(t, grpo.Config{}.Validate())
	rewards := []float64{1, 0, 0, 0.5, 0.5, 0.5}
	dst := make([]float64, len(rewards))
	st, err := grpo.Advantages(dst, rewards, grpo.Contiguous(3), grpo.Config{})
	require.NoError(t, err)
	mean := 1.0 / 3
	std := math.Sqrt((2*mean*mean + (1-mean)*(1-mean)) / 2)
	assert.InDelta(t, (1-mean)/std, dst[0], 1e-12)
	assert.InDelta(t, -mean/std, dst[1], 1e-12)
	assert.Equal(t, []float64{0, 0, 0}, dst[3:])
	assert.Equal(t, 1, st.Vanishing)
}

// TestZeroShapingAndOverlongRejected: Scale 0 would map every reward to 0,
// and an Overlong without a generation limit means nothing; both are
// errors that name where to start.
func TestZeroShapingAndOverlongRejected(t *testing.T) {
	r := []float64{1, 0}
	for _, c := range []struct {
		name, arg, start string
		err              error
	}{
		{"Shaping.Validate", "Shaping.Scale", "AReaLShaping", grpo.Shaping{}.Validate()},
		{"ShapeRewards", "Shaping.Scale", "AReaLShaping", grpo.ShapeRewards(make([]float64, 2), r, grpo.Shaping{Bias: 1})},
		{"Overlong.Validate", "Overlong", "DAPOOverlong", grpo.Overlong{}.Validate()},
		{"ApplyOverlong", "Overlong", "DAPOOverlong", grpo.ApplyOverlong(r, []int{5, 6}, grpo.Overlong{})},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.err)
			assert.True(t, errors.Is(c.err, tensor.ErrRange), "%v", c.err)
			var ae *tensor.ArgError
			require.True(t, errors.As(c.err, &ae), "%v", c.err)
			assert.Equal(t, c.arg, ae.Arg)
			assert.Contains(t, c.err.Error(), c.start)
		})
	}
	assert.NoError(t, grpo.AReaLShaping().Validate())
	o := grpo.DAPOOverlong()
	require.NoError(t, o.Validate())
	assert.Equal(t, grpo.Overlong{MaxLen: 20480, Buffer: 4096, Factor: 1}, o)
	assert.Equal(t, -0.5, o.Penalty(20480-2048))
}
