package ppo_test

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZeroConfigRejected: the zero Config (no clipping range) is an error
// that says where to start, from Validate and from the loss itself.
func TestZeroConfigRejected(t *testing.T) {
	err := ppo.Config{}.Validate()
	require.Error(t, err)
	assert.True(t, errors.Is(err, tensor.ErrRange))
	var ae *tensor.ArgError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "Config", ae.Arg)
	assert.Contains(t, err.Error(), "DefaultConfig")

	one := tensor.MustNew[float64](1, 1)
	one.Data[0] = 1
	in := ppo.Inputs[float64]{Logp: one, OldLogp: one, Advantages: one, Mask: one}
	_, err = ppo.PolicyLoss(like(make([]float64, 1), in.Logp), in, ppo.Config{})
	assert.True(t, errors.Is(err, tensor.ErrRange), "PolicyLoss with the zero Config: %v", err)

	assert.NoError(t, ppo.DefaultConfig().Validate())
}

// TestZeroValueConfigIsUnclipped: the zero ValueConfig is the PPO paper's
// unclipped value loss, ½·mean((v − R)²), with OldValues optional.
func TestZeroValueConfigIsUnclipped(t *testing.T) {
	require.NoError(t, ppo.ValueConfig{}.Validate())
	v, _ := tensor.FromSlice([]float64{2, 0.5, 9}, 1, 3)
	ret, _ := tensor.FromSlice([]float64{3, 1, 0}, 1, 3)
	mask, _ := tensor.FromSlice([]float64{1, 1, 0}, 1, 3)
	grad := tensor.MustNew[float64](1, 3)
	res, err := ppo.ValueLoss(grad, ppo.ValueInputs[float64]{Values: v, Returns: ret, Mask: mask}, ppo.ValueConfig{})
	require.NoError(t, err)
	assert.InDelta(t, 0.5*(1+0.25)/2, res.Loss, 1e-15)
	assert.Equal(t, []float64{-0.5, -0.25, 0}, grad.Data)
}
