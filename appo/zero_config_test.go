package appo_test

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZeroConfigRejected: the zero Config (K1 = K2 = K3 = 0) is an error
// naming DefaultConfig, from Validate and from Weights.
func TestZeroConfigRejected(t *testing.T) {
	_, errWeights := appo.Weights(nil, appo.Inputs[float64]{}, appo.Config{})
	for _, err := range []error{appo.Config{}.Validate(), errWeights} {
		require.Error(t, err)
		assert.True(t, errors.Is(err, tensor.ErrRange), "%v", err)
		var ae *tensor.ArgError
		require.True(t, errors.As(err, &ae), "%v", err)
		assert.Equal(t, "Config", ae.Arg)
		assert.Contains(t, err.Error(), "DefaultConfig")
	}
	assert.NoError(t, appo.DefaultConfig().Validate())
}
