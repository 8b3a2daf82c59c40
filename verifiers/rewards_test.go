package verifiers_test

import (
	"math"
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRewards(t *testing.T) {
	results := []verifiers.Result{{Score: 1, Correct: true}, {Timeout: true, Reason: "timeout: x"}, {Score: 0.25}}
	r := make([]float32, 3)
	scored := make([]bool, 3)
	require.NoError(t, verifiers.Rewards(r, scored, results))
	assert.Equal(t, []float32{1, 0, 0.25}, r)
	assert.Equal(t, []bool{true, false, true}, scored)

	assert.ErrorIs(t, verifiers.Rewards(make([]float64, 3), nil, results), tensor.ErrRange, "a timeout without scored")
	assert.ErrorIs(t, verifiers.Rewards(make([]float64, 2), nil, results), tensor.ErrShape)
	assert.ErrorIs(t, verifiers.Rewards(make([]float64, 3), make([]bool, 1), results), tensor.ErrShape)
	assert.ErrorIs(t, verifiers.Rewards(make([]float64, 1), nil, []verifiers.Result{{Score: math.NaN()}}), tensor.ErrNonFinite)
}
