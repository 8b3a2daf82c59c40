package appo_test

import (
	"fmt"
	"log"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/tensor"
)

// The worked example of the package documentation: four responses of
// three tokens over six frames.
func Example() {
	attention := [][][]float32{
		{{0, .6, .5, 0, 0, 0}, {0, .2, .3, 0, .1, 0}, {.1, 0, 0, 0, .1, 0}},
		{{0, 0, .7, 0, .2, 0}, {0, .1, .1, 0, .6, 0}, {0, 0, 0, .1, .1, .1}},
		{{0, 0, .4, 0, 0, .5}, {.1, 0, .2, 0, 0, .3}, {0, .1, 0, 0, 0, 0}},
		{{.8, 0, 0, 0, 0, .2}, {.2, 0, .1, 0, 0, .4}, {0, 0, 0, .2, 0, 0}},
	}
	sure, other, half := []float32{1, 0}, []float32{0, 1}, []float32{.5, .5}
	dists := [][][]float32{
		{sure, half, half},
		{sure, sure, half},
		{other, half, half},
		{half, other, half},
	}

	in := appo.Inputs[float32]{Rewards: []float32{1, 1, 0, 0}}
	var rows [][]float32
	lengths := make([]int, len(attention))
	for i, a := range attention {
		x, err := tensor.FromRows[float32](a)
		if err != nil {
			log.Fatal(err)
		}
		in.Attention = append(in.Attention, x)
		rows = append(rows, dists[i]...)
		lengths[i] = len(a)
	}
	probs, err := tensor.FromRows[float32](rows)
	if err != nil {
		log.Fatal(err)
	}
	if in.Dists, err = appo.NewDense(probs, lengths); err != nil {
		log.Fatal(err)
	}

	cfg := appo.DefaultConfig() // τ 0.5, α 1.7, Soft
	cfg.K1, cfg.K2, cfg.K3 = 2, 2, 1
	var w appo.Weighter[float32]
	weights := make([]float32, len(rows))
	res, err := w.Weights(weights, in, cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ψS1", res.HighFrames, "ψS2", res.LowFrames, "ψ′", res.Frames)
	fmt.Println("group size", res.GroupSize, "weighted tokens", res.Weighted)
	for i := range attention {
		fmt.Printf("response %d: %.4g\n", i, weights[3*i:3*i+3])
	}
	// Output:
	// ψS1 [1 2 4] ψS2 [0 2 5] ψ′ [1 2 4]
	// group size 4 weighted tokens 8
	// response 0: [1.85 1 1]
	// response 1: [1 2.7 1]
	// response 2: [1.85 1 1]
	// response 3: [1 1 1]
}

// Scatter lays the weights of two responses out as the [G, T] token
// weights of package ppo. Response 0's tokens are split by an observation
// token (mask 0), as in a multi-turn trajectory.
func ExampleScatter() {
	mask := tensor.Batch[float32]{Shape: tensor.Shape{B: 2, T: 4}, Data: []float32{
		1, 0, 1, 1,
		1, 1, 0, 0,
	}}
	weights := []float32{1.85, 1, 2.7, 1, 1.2} // 3 tokens, then 2
	tw := tensor.MustNew[float32](2, 4)
	if err := appo.Scatter(tw, mask, weights, []int{3, 2}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(tw.Row(0), tw.Row(1))
	// Output: [1.85 1 1 2.7] [1 1.2 1 1]
}

// FrameAttention averages raw attention (Eq. 4): here one layer, two heads,
// one response token, and two frames of two visual tokens each among five
// key positions (position 0 is a text token).
func ExampleFrameAttention() {
	layer := tensor.Batch[float32]{Shape: tensor.Shape{B: 2, T: 5}, Data: []float32{
		.2, .1, .3, .2, .2, // head 0
		.4, .2, .2, .1, .1, // head 1
	}}
	attn := tensor.MustNew[float32](1, 2)
	if err := appo.FrameAttention(attn, []tensor.Batch[float32]{layer}, 2, []appo.Span{{1, 3}, {3, 5}}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4g\n", attn.Row(0))
	// Output: [0.2 0.15]
}
