package gae_test

import (
	"fmt"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// The multi-turn chain a VAGEN-style agent trainer runs per batch: turn ends
// from the loss mask, the environment's per-turn rewards placed at them, the
// per-token KL penalty folded in, then Bi-Level GAE. Two rows: one of two
// turns, one of a single turn (its second turn reward is padding).
func Example() {
	const B, T = 2, 6
	mask, _ := tensor.FromSlice([]float64{
		0, 1, 1, 0, 1, 1, // prompt, turn 1, observation, turn 2
		0, 1, 1, 1, 0, 0, // prompt, one turn, padding
	}, B, T)
	values := tensor.MustNew[float64](B, T)
	kl, _ := tensor.FromSlice([]float64{
		0, 0.1, 0.2, 0, 0.1, 0.1,
		0, 0.3, 0.1, 0.2, 0, 0,
	}, B, T)
	turnRewards, _ := tensor.FromSlice([]float64{
		0.5, 1, // row 0: two turns
		1, 0, // row 1: one turn; the 0 is padding, never read
	}, B, 2)

	turnEnd := tensor.MustNew[float64](B, T)
	rewards := tensor.MustNew[float64](B, T)
	adv, ret := tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
	if err := gae.TurnEnds(turnEnd, mask); err != nil {
		panic(err)
	}
	if err := gae.PlaceTurnRewards(rewards, turnEnd, turnRewards); err != nil {
		panic(err)
	}
	if err := gae.AddKLPenalty(rewards, kl, mask, 0.1); err != nil {
		panic(err)
	}
	if err := gae.BiLevel(adv, ret, rewards, values, mask, turnEnd, gae.DefaultBiLevelConfig()); err != nil {
		panic(err)
	}
	for b := range B {
		fmt.Printf("row %d turn ends %v\n", b, turnEnd.Row(b))
		fmt.Printf("row %d rewards   %.2f\n", b, rewards.Row(b))
		fmt.Printf("row %d advantage %.4f\n", b, adv.Row(b))
	}
	// Output:
	// row 0 turn ends [0 0 1 0 0 1]
	// row 0 rewards   [0.00 -0.01 0.48 0.00 -0.01 0.99]
	// row 0 advantage [0.0000 1.4105 1.4205 0.0000 0.9800 0.9900]
	// row 1 turn ends [0 0 0 1 0 0]
	// row 1 rewards   [0.00 -0.03 -0.01 0.98 0.00 0.00]
	// row 1 advantage [0.0000 0.9400 0.9700 0.9800 0.0000 0.0000]
}

// TurnEnds marks the last valid token of each run of valid tokens.
func ExampleTurnEnds() {
	mask, _ := tensor.FromSlice([]float64{0, 1, 1, 0, 0, 1, 1, 1}, 1, 8)
	ends := tensor.MustNew[float64](1, 8)
	if err := gae.TurnEnds(ends, mask); err != nil {
		panic(err)
	}
	fmt.Println(ends.Data)
	// Output: [0 0 1 0 0 0 0 1]
}

// PlaceTurnRewards writes the k-th turn's reward at the k-th turn end and
// zeroes every other token.
func ExamplePlaceTurnRewards() {
	ends, _ := tensor.FromSlice([]float64{0, 0, 1, 0, 0, 0, 0, 1}, 1, 8)
	turnRewards, _ := tensor.FromSlice([]float64{0.5, 2}, 1, 2)
	rewards := tensor.MustNew[float64](1, 8)
	if err := gae.PlaceTurnRewards(rewards, ends, turnRewards); err != nil {
		panic(err)
	}
	fmt.Println(rewards.Data)
	// Output: [0 0 0.5 0 0 0 0 2]
}

// AddKLPenalty subtracts β·kl on the valid tokens only.
func ExampleAddKLPenalty() {
	rewards, _ := tensor.FromSlice([]float64{0, 0, 1, 0}, 1, 4)
	kl, _ := tensor.FromSlice([]float64{9, 0.5, 0.5, 9}, 1, 4)
	mask, _ := tensor.FromSlice([]float64{0, 1, 1, 0}, 1, 4)
	if err := gae.AddKLPenalty(rewards, kl, mask, 0.1); err != nil {
		panic(err)
	}
	fmt.Println(rewards.Data)
	// Output: [0 -0.05 0.95 0]
}
