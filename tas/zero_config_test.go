package tas_test

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZeroConfigRejected: the zero Config (λ = 0, every weight 1) would turn
// TAS off unnoticed; it is an error naming DefaultConfig, and Uniform is
// how to turn shaping off on purpose.
func TestZeroConfigRejected(t *testing.T) {
	mask, _ := tensor.FromSlice([]float64{1, 1, 1}, 1, 3)
	dst := tensor.MustNew[float64](1, 3)
	for _, err := range []error{tas.Config{}.Validate(), tas.Weights(dst, mask, tas.Config{})} {
		require.Error(t, err)
		assert.True(t, errors.Is(err, tensor.ErrRange), "%v", err)
		var ae *tensor.ArgError
		require.True(t, errors.As(err, &ae), "%v", err)
		assert.Equal(t, "Config", ae.Arg)
		assert.Contains(t, err.Error(), "DefaultConfig")
	}
	require.NoError(t, tas.Weights(dst, mask, tas.Config{Shape: tas.Uniform}))
	assert.Equal(t, []float64{1, 1, 1}, dst.Data)
	assert.NoError(t, tas.DefaultConfig().Validate())
}
