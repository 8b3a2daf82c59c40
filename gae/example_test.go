package gae_test

import (
	"fmt"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// A Sokoban agent plays two turns. The sequence holds the initial grid
// (observation), the first response, the grid after the move (observation)
// and the second response; only the responses are trained on. The first
// turn earns 0.5 for a well-formed answer, the second 1.5 for also pushing
// the box onto the target.
func ExampleBiLevel() {
	const T = 10
	mask, _ := tensor.FromSlice([]float64{0, 0, 1, 1, 1, 0, 0, 1, 1, 1}, 1, T)
	values, _ := tensor.FromSlice([]float64{0, 0, 0.8, 0.9, 1.0, 0, 0, 1.2, 1.3, 1.4}, 1, T)
	kl, _ := tensor.FromSlice([]float64{0, 0, 0.2, 0.1, 0.3, 0, 0, 0.5, 0.1, 0.2}, 1, T)

	turnRewards, _ := tensor.FromSlice([]float64{0.5, 1.5}, 1, 2) // one row, two turns
	turnEnd := tensor.MustNew[float64](1, T)
	rewards := tensor.MustNew[float64](1, T)
	if err := gae.TurnEnds(turnEnd, mask); err != nil {
		panic(err)
	}
	if err := gae.PlaceTurnRewards(rewards, turnEnd, turnRewards); err != nil {
		panic(err)
	}
	if err := gae.AddKLPenalty(rewards, kl, mask, gae.DefaultKLCoef); err != nil {
		panic(err)
	}

	adv, ret := tensor.MustNew[float64](1, T), tensor.MustNew[float64](1, T)
	cfg := gae.DefaultBiLevelConfig() // γ_token = λ = 1, γ_turn = 0.95
	if err := gae.BiLevel(adv, ret, rewards, values, mask, turnEnd, cfg); err != nil {
		panic(err)
	}
	for t := range T {
		if mask.Data[t] == 1 {
			fmt.Printf("token %d  turn end %v  reward %+.4f  advantage %.4f  return %.4f\n",
				t, turnEnd.Data[t] == 1, rewards.Data[t], adv.Data[t], ret.Data[t])
		}
	}
	// Output:
	// token 2  turn end false  reward -0.0002  advantage 1.1242  return 1.9242
	// token 3  turn end false  reward -0.0001  advantage 1.0244  return 1.9244
	// token 4  turn end true  reward +0.4997  advantage 0.9245  return 1.9245
	// token 7  turn end false  reward -0.0005  advantage 0.2992  return 1.4992
	// token 8  turn end false  reward -0.0001  advantage 0.1997  return 1.4997
	// token 9  turn end true  reward +1.4998  advantage 0.0998  return 1.4998
}
