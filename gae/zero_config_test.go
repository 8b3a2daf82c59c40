package gae_test

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZeroConfigsRejected: the zero Config and BiLevelConfig (every γ and λ
// 0) are errors that say which Default to start from, from Validate and
// from the estimators; γ = 0 on purpose is still possible with λ = 1.
func TestZeroConfigsRejected(t *testing.T) {
	in := specRow
	adv, ret := tensor.MustNew[float64](in.Rewards.B, in.Rewards.T), tensor.MustNew[float64](in.Rewards.B, in.Rewards.T)
	for _, c := range []struct {
		name, arg, start string
		err              error
	}{
		{"Config.Validate", "Config", "DefaultConfig", gae.Config{}.Validate()},
		{"Advantages", "Config", "DefaultConfig", gae.Advantages(adv, ret, in.Rewards, in.Values, in.Mask, gae.Config{})},
		{"TurnLevel", "Config", "DefaultTurnConfig", gae.TurnLevel(adv, ret, in.Rewards, in.Values, in.Mask, in.TurnEnd, gae.Config{})},
		{"BiLevelConfig.Validate", "BiLevelConfig", "DefaultBiLevelConfig", gae.BiLevelConfig{}.Validate()},
		{"BiLevel", "BiLevelConfig", "DefaultBiLevelConfig", gae.BiLevel(adv, ret, in.Rewards, in.Values, in.Mask, in.TurnEnd, gae.BiLevelConfig{})},
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
	// γ = 0: A_t = r_t − V_t on every valid token, whatever λ.
	require.NoError(t, gae.Advantages(adv, ret, in.Rewards, in.Values, in.Mask, gae.Config{Lambda: 1}))
	for i, m := range in.Mask.Data {
		if m == 1 {
			assert.InDelta(t, in.Rewards.Data[i]-in.Values.Data[i], adv.Data[i], 1e-15, "position %d", i)
		}
	}
	assert.NoError(t, gae.DefaultConfig().Validate())
	assert.NoError(t, gae.DefaultTurnConfig().Validate())
	assert.NoError(t, gae.DefaultBiLevelConfig().Validate())
}
