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
