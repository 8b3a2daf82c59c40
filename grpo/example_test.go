package grpo_test

import (
	"fmt"

	"github.com/rlpost/rlpost/grpo"
)

// Two prompts, four responses each, scored 1 for a correct answer. The
// second prompt is too hard: every response failed, so its advantages
// vanish and it teaches nothing — the case AVATAR's replay and DAPO's
// dynamic sampling exist for.
func ExampleAdvantages() {
	rewards := []float64{1, 0, 0, 1, 0, 0, 0, 0}
	adv := make([]float64, len(rewards))
	stats, err := grpo.Advantages(adv, rewards, grpo.Contiguous(4), grpo.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f\n", adv)
	fmt.Printf("vanishing groups: %d of %d\n", stats.Vanishing, stats.Groups)

	keep := make([]bool, 2)
	kept, _ := grpo.DynamicSampling(keep, rewards, grpo.Contiguous(4))
	fmt.Println("DAPO keeps", kept, "group:", keep)
	// Output:
	// [0.8660 -0.8660 -0.8660 0.8660 0.0000 0.0000 0.0000 0.0000]
	// vanishing groups: 1 of 2
	// DAPO keeps 1 group: [true false]
}

// DAPO's soft overlong punishment with a 4096-token limit and a 512-token
// ramp.
func ExampleOverlong() {
	o := grpo.Overlong{MaxLen: 4096, Buffer: 512, Factor: 1}
	for _, n := range []int{1000, 3584, 3840, 4096, 5000} {
		fmt.Printf("%d tokens: %+.2f\n", n, o.Penalty(n))
	}
	// Output:
	// 1000 tokens: +0.00
	// 3584 tokens: +0.00
	// 3840 tokens: -0.50
	// 4096 tokens: -1.00
	// 5000 tokens: -1.00
}
