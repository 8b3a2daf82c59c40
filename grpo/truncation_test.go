package grpo_test

import (
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

func TestMaskTruncated(t *testing.T) {
	mask, _ := tensor.FromRows[float32]([][]float64{{1, 1, 1}, {1, 1, 0}, {1, 1, 1}})
	n, err := grpo.MaskTruncated(mask, []bool{true, false, true})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []float32{0, 0, 0, 1, 1, 0, 0, 0, 0}, mask.Data)

	_, err = grpo.MaskTruncated(mask, []bool{true})
	require.ErrorIs(t, err, tensor.ErrShape)
	require.Equal(t, []float32{0, 0, 0, 1, 1, 0, 0, 0, 0}, mask.Data)

	// Truncated responses as unscored rewards: out of the baselines too.
	r := []float64{1, 0, 0.3, 1}
	adv := make([]float64, 4)
	_, err = grpo.AdvantagesWith(adv, r, grpo.Contiguous(4), grpo.Config{Scale: grpo.ScaleNone},
		grpo.Inputs[float64]{Scored: []bool{true, true, false, true}})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{1.0 / 3, -2.0 / 3, 0, 1.0 / 3}, adv, 1e-15)

	big := tensor.MustNew[float32](64, 128)
	cut := make([]bool, 64)
	cut[3] = true
	require.Zero(t, testing.AllocsPerRun(20, func() { _, _ = grpo.MaskTruncated(big, cut) }))
}
