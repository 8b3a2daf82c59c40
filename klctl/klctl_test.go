package klctl_test

import (
	"math"
	"testing"

	"github.com/rlpost/rlpost/klctl"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

// TestAdaptiveByHand follows verl's AdaptiveKLController on numbers worked
// by hand: β = 0.1, target 6, horizon 10000, batches of 256.
func TestAdaptiveByHand(t *testing.T) {
	c, err := klctl.Adaptive(0.1, 6, 10000)
	require.NoError(t, err)
	// KL 9: e = clip(0.5) = 0.2, β = 0.1·(1 + 0.2·256/10000) = 0.100512.
	b, err := c.Update(9, 256)
	require.NoError(t, err)
	require.InDelta(t, 0.100512, b, 1e-15)
	// KL 5.4: e = −0.1, β = 0.100512·(1 − 0.1·0.0256) = 0.100512·0.99744.
	b, err = c.Update(5.4, 256)
	require.NoError(t, err)
	require.InDelta(t, 0.100512*0.99744, b, 1e-15)
	require.Equal(t, b, c.Value())
	// KL 0: e = clip(−1) = −0.2.
	before := c.Value()
	b, _ = c.Update(0, 256)
	require.InDelta(t, before*(1-0.2*0.0256), b, 1e-15)
	// On target: unchanged.
	before = c.Value()
	b, _ = c.Update(6, 256)
	require.Equal(t, before, b)
}

// TestZiegler: with n/H = K_β = 0.1 one step is the paper's update.
func TestZiegler(t *testing.T) {
	c, err := klctl.Adaptive(0.2, 1, 10)
	require.NoError(t, err)
	b, _ := c.Update(1.1, 1) // e = 0.1
	require.InDelta(t, 0.2*1.01, b, 1e-15)
}

func TestFixed(t *testing.T) {
	c, err := klctl.Fixed(klctl.DefaultCoef)
	require.NoError(t, err)
	b, err := c.Update(50, 1000)
	require.NoError(t, err)
	require.Equal(t, 0.001, b)
	require.False(t, c.Adaptive())
	var zero klctl.Controller
	require.Equal(t, 0.0, zero.Value())
}

func TestErrors(t *testing.T) {
	_, err := klctl.Fixed(-1)
	require.ErrorIs(t, err, tensor.ErrRange)
	_, err = klctl.Fixed(math.NaN())
	require.ErrorIs(t, err, tensor.ErrRange)
	_, err = klctl.Adaptive(0.1, 0, 10)
	require.ErrorIs(t, err, tensor.ErrRange)
	_, err = klctl.Adaptive(0.1, 1, 0)
	require.ErrorIs(t, err, tensor.ErrRange)
	c, _ := klctl.Adaptive(0.1, 1, 10)
	_, err = c.Update(math.Inf(1), 1)
	require.ErrorIs(t, err, tensor.ErrNonFinite)
	_, err = c.Update(1, -1)
	require.ErrorIs(t, err, tensor.ErrRange)
	require.Equal(t, 0.1, c.Value())
	// A huge step cannot make β negative.
	b, err := c.Update(0, 1000)
	require.NoError(t, err)
	require.Equal(t, 0.0, b)
}

func TestUpdateAllocatesNothing(t *testing.T) {
	c, _ := klctl.Adaptive(0.1, 1, 10000)
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = c.Update(1.5, 8) }))
}
