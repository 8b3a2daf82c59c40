package gae_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// TestWhitenMeanEpsByHand: one row of four tokens, reward 1 at the end,
// values 0, γ = λ = 1, so every advantage is 1. The exact whitening gives
// 0; verl's masked_whiten, whose means divide by 4 + 10⁻⁸, gives d =
// 1 − 4/(4 + ε) over sqrt(4d²/(4 + ε)·4/3 + 10⁻⁸): 2.499999983764656·10⁻⁵,
// what verl's compute_gae_advantage_return (b178a3c) prints.
func TestWhitenMeanEpsByHand(t *testing.T) {
	rewards := tensor.MustNew[float64](1, 4)
	rewards.Data[3] = 1
	values := tensor.MustNew[float64](1, 4)
	mask := tensor.MustNew[float64](1, 4)
	for i := range mask.Data {
		mask.Data[i] = 1
	}
	adv, ret := tensor.MustNew[float64](1, 4), tensor.MustNew[float64](1, 4)
	cfg := gae.Config{Gamma: 1, Lambda: 1, Whiten: true}
	require.NoError(t, gae.Advantages(adv, ret, rewards, values, mask, cfg))
	require.Equal(t, []float64{0, 0, 0, 0}, adv.Data)
	cfg.WhitenMeanEps = 1e-8
	require.NoError(t, gae.Advantages(adv, ret, rewards, values, mask, cfg))
	eps := 1e-8 // a variable: Go would evaluate the constant expression exactly
	d := 1 - 4/(4+eps)
	want := d / math.Sqrt(4*d*d/(4+eps)*4/3+1e-8)
	for _, a := range adv.Data {
		require.InDelta(t, want, a, 1e-18)
		require.InDelta(t, 2.499999983764656e-05, a, 1e-15)
	}
	require.Equal(t, []float64{1, 1, 1, 1}, ret.Data)

	// One valid token whitens to 0 either way (verl raises there).
	for i := range mask.Data[:3] {
		mask.Data[i] = 0
	}
	require.NoError(t, gae.Advantages(adv, ret, rewards, values, mask, cfg))
	require.Equal(t, []float64{0, 0, 0, 0}, adv.Data)

	for _, bad := range []float64{-1e-8, math.Inf(1), math.NaN()} {
		cfg.WhitenMeanEps = bad
		err := gae.Advantages(adv, ret, rewards, values, mask, cfg)
		require.ErrorIs(t, err, tensor.ErrRange, "%v", bad)
		require.ErrorContains(t, err, "WhitenMeanEps")
	}
}
