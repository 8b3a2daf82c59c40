package gae_test

import (
	"math"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/klctl"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

// TestApplyKLPenaltyByHand: β = 0.5 on rows (kl 0.2, 0.4 | kl 1.0, masked),
// so rewards lose 0.1, 0.2 and 0.5; the step's KL is mean(0.3, 1.0) = 0.65
// (verl: mean over rows of each row's masked mean), and the adaptive
// controller (target 0.65/1.5, horizon 20) moves β by 1 + 0.2·2/20.
func TestApplyKLPenaltyByHand(t *testing.T) {
	rewards, _ := tensor.FromRows[float64]([][]float64{{0, 1}, {2, 3}})
	kl, _ := tensor.FromRows[float64]([][]float64{{0.2, 0.4}, {1.0, 9}})
	mask, _ := tensor.FromRows[float64]([][]float64{{1, 1}, {1, 0}})
	ctl, err := klctl.Adaptive(0.5, 0.65/1.5, 20)
	require.NoError(t, err)
	got, beta, err := gae.ApplyKLPenalty(rewards, kl, mask, &ctl)
	require.NoError(t, err)
	require.InDelta(t, 0.65, got, 1e-15)
	require.Equal(t, 0.5, beta)
	require.InDeltaSlice(t, []float64{-0.1, 0.8, 1.5, 3}, rewards.Data, 1e-15)
	require.InDelta(t, 0.5*(1+0.2*2.0/20), ctl.Value(), 1e-15)

	// A fixed controller keeps β; a row without a valid token counts 0.
	fixed, _ := klctl.Fixed(0.1)
	mask2, _ := tensor.FromRows[float64]([][]float64{{1, 1}, {0, 0}})
	got, _, err = gae.ApplyKLPenalty(rewards, kl, mask2, &fixed)
	require.NoError(t, err)
	require.InDelta(t, 0.15, got, 1e-15)
	require.Equal(t, 0.1, fixed.Value())
}

func TestApplyKLPenaltyErrors(t *testing.T) {
	rewards, _ := tensor.FromRows[float64]([][]float64{{0, 1}})
	kl, _ := tensor.FromRows[float64]([][]float64{{0.2, math.NaN()}})
	mask, _ := tensor.FromRows[float64]([][]float64{{1, 1}})
	ctl, _ := klctl.Adaptive(0.5, 1, 20)
	_, _, err := gae.ApplyKLPenalty(rewards, kl, mask, &ctl)
	require.ErrorIs(t, err, tensor.ErrNonFinite)
	require.Equal(t, 0.5, ctl.Value())
	require.Equal(t, []float64{0, 1}, rewards.Data)
	_, _, err = gae.ApplyKLPenalty(rewards, kl, mask, nil)
	require.ErrorIs(t, err, tensor.ErrRange)
	short, _ := tensor.FromRows[float64]([][]float64{{1}})
	_, _, err = gae.ApplyKLPenalty(rewards, kl, short, &ctl)
	require.ErrorIs(t, err, tensor.ErrShape)
}

func TestApplyKLPenaltyAllocatesNothing(t *testing.T) {
	rewards := tensor.MustNew[float32](8, 64)
	kl := tensor.MustNew[float32](8, 64)
	mask := tensor.MustNew[float32](8, 64)
	for i := range mask.Data {
		mask.Data[i], kl.Data[i] = 1, 0.01
	}
	ctl, _ := klctl.Adaptive(0.001, 0.1, 10000)
	require.Zero(t, testing.AllocsPerRun(20, func() {
		if _, _, err := gae.ApplyKLPenalty(rewards, kl, mask, &ctl); err != nil {
			t.Fatal(err)
		}
	}))
}
