package grpo_test

import (
	"fmt"

	"github.com/rlpost/rlpost/grpo"
)

// Two prompts, four responses each; the judge failed on one response of
// the first prompt, which must not count as a 0.
func ExampleAdvantagesWith() {
	rewards := []float64{1, 0, 0, 1, 1, 1, 0, 1}
	scored := []bool{true, true, false, true, true, true, true, true}
	adv := make([]float64, len(rewards))
	st, err := grpo.AdvantagesWith(adv, rewards, grpo.Contiguous(4), grpo.Config{Scale: grpo.ScaleNone},
		grpo.Inputs[float64]{Scored: scored})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.3f unscored=%d\n", adv, st.Unscored)
	// Output:
	// [0.333 -0.667 0.000 0.333 0.250 0.250 -0.750 0.250] unscored=1
}

// Unbiased pass@k: with k = 2 each response earns how much it raises the
// best of itself and one other response, on average.
func ExampleAdvantagesWith_passK() {
	rewards := []float64{3, 1, 2, 0}
	adv := make([]float64, len(rewards))
	cfg := grpo.Config{Estimator: grpo.PassK, K: 2, Scale: grpo.ScaleNone}
	if _, err := grpo.AdvantagesWith(adv, rewards, grpo.Contiguous(4), cfg, grpo.Inputs[float64]{}); err != nil {
		panic(err)
	}
	fmt.Printf("%.3f\n", adv)
	// Output:
	// [2.000 0.333 1.000 0.000]
}
