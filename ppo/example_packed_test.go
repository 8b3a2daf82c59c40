package ppo_test

import (
	"fmt"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// A packed batch as flash-attention's variable-length kernels lay it out:
// three responses of 3, 1 and 2 tokens in one flat array of 6, delimited by
// cu_seqlens = [0, 3, 4, 6]. Every input and the gradient share the
// offsets; nothing is copied or padded.
func ExamplePolicyLoss_packed() {
	cuSeqlens := []int{0, 3, 4, 6}
	pack := func(data []float64) tensor.Batch[float64] {
		x, err := tensor.Packed(data, cuSeqlens)
		if err != nil {
			panic(err)
		}
		return x
	}
	in := ppo.Inputs[float64]{
		Logp:       pack([]float64{-1, -1, -1, -2, -0.5, -0.5}),
		OldLogp:    pack([]float64{-1, -1.1, -0.9, -2, -0.5, -0.6}),
		Advantages: pack([]float64{1, 1, 1, -1, 0.5, 0.5}),
		Mask:       pack([]float64{1, 1, 1, 1, 0, 1}), // the third response's first token is not trained on
	}
	grad := pack(make([]float64, 6))
	res, err := ppo.PolicyLoss(grad, in, ppo.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("B = %d, T = %d (the longest row), %d tokens, %d valid\n", grad.B, grad.T, grad.Len(), res.Tokens)
	fmt.Printf("loss %.4f\n", res.Loss)
	for b := range grad.B {
		fmt.Printf("row %d grad %.4f\n", b, grad.Row(b))
	}
	// Output:
	// B = 3, T = 3 (the longest row), 6 tokens, 5 valid
	// loss -0.5125
	// row 0 grad [-0.2000 -0.2210 -0.1810]
	// row 1 grad [0.2000]
	// row 2 grad [0.0000 -0.1105]
}
