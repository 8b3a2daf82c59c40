package grpo_test

import (
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

// TestReinforcePlusPlusIsTokenWhitening: REINFORCE++ with lengths is the
// token-level form of the paper and verl — the outcome reward on each
// response's last token, discounted returns with γ = 1 (GAE with zero
// values and λ = 1), whitened over the valid tokens — read off per response.
func TestReinforcePlusPlusIsTokenWhitening(t *testing.T) {
	rewards := []float64{1, 0, 0.5, -1}
	lengths := []int{3, 1, 4, 2}
	const T = 4
	tr, mask, values := tensor.MustNew[float64](4, T), tensor.MustNew[float64](4, T), tensor.MustNew[float64](4, T)
	for b, l := range lengths {
		for t := range l {
			mask.Data[b*T+t] = 1
		}
		tr.Data[b*T+l-1] = rewards[b]
	}
	adv, ret := tensor.MustNew[float64](4, T), tensor.MustNew[float64](4, T)
	require.NoError(t, gae.Advantages(adv, ret, tr, values, mask, gae.Config{Gamma: 1, Lambda: 1, Whiten: true}))
	got := make([]float64, 4)
	_, err := grpo.AdvantagesWith(got, rewards, grpo.Contiguous(1), grpo.Config{Estimator: grpo.ReinforcePlusPlus},
		grpo.Inputs[float64]{Lengths: lengths})
	require.NoError(t, err)
	for b, l := range lengths {
		for t2 := range l {
			require.InDelta(t, adv.Data[b*T+t2], got[b], 1e-12, "row %d token %d", b, t2)
		}
	}
}
