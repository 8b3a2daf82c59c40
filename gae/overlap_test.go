package gae_test

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
)

// TestOverlappingOutputs: the same batch for advantages and returns, or an
// output that is an input, was once accepted and left one result in place
// of the other; it is ErrOverlap naming the output.
func TestOverlappingOutputs(t *testing.T) {
	in := specRow
	B, T := in.Rewards.B, in.Rewards.T
	values := tensor.MustNew[float64](B, T)
	copy(values.Data, in.Values.Data)
	one := tensor.MustNew[float64](B, T)
	other := tensor.MustNew[float64](B, T)
	for _, c := range []struct {
		name string
		err  error
		arg  string
	}{
		{"Advantages adv = ret", gae.Advantages(one, one, in.Rewards, values, in.Mask, gae.DefaultConfig()), "adv"},
		{"BiLevel adv = ret", gae.BiLevel(one, one, in.Rewards, values, in.Mask, in.TurnEnd, gae.DefaultBiLevelConfig()), "adv"},
		{"TurnLevel adv = ret", gae.TurnLevel(one, one, in.Rewards, values, in.Mask, in.TurnEnd, gae.DefaultTurnConfig()), "adv"},
		{"BiLevel ret = values", gae.BiLevel(other, values, in.Rewards, values, in.Mask, in.TurnEnd, gae.DefaultBiLevelConfig()), "ret"},
		{"Advantages adv = rewards", gae.Advantages(in.Rewards, other, in.Rewards, values, in.Mask, gae.DefaultConfig()), "adv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.True(t, errors.Is(c.err, tensor.ErrOverlap), "%v", c.err)
			var ae *tensor.ArgError
			if assert.True(t, errors.As(c.err, &ae), "%v", c.err) {
				assert.Equal(t, c.arg, ae.Arg)
			}
		})
	}
	// Returns and advantages in two halves of one allocation are fine.
	both := make([]float64, 2*B*T)
	adv := tensor.Batch[float64]{Shape: in.Rewards.Shape, Data: both[:B*T]}
	ret := tensor.Batch[float64]{Shape: in.Rewards.Shape, Data: both[B*T:]}
	assert.NoError(t, gae.BiLevel(adv, ret, in.Rewards, values, in.Mask, in.TurnEnd, gae.DefaultBiLevelConfig()))
}
