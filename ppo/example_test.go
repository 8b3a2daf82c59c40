package ppo_test

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// Four tokens of one response, one on each branch of the dual-clip
// surrogate: clipped from above (A > 0, r = 1.5 > 1.28), inside the range
// (r = 1), clipped from below (A < 0, r = 0.5 < 0.8) and bounded by the dual
// clip (A < 0, r = 4 > c = 3). Only the token inside the range has a
// gradient.
func ExamplePolicyLoss() {
	r := []float64{1.5, 1, 0.5, 4}
	logp, _ := tensor.FromSlice([]float64{-1, -1, -1, -1}, 1, 4)
	old := tensor.MustNew[float64](1, 4)
	for t := range r {
		old.Data[t] = logp.Data[t] - math.Log(r[t])
	}
	adv, _ := tensor.FromSlice([]float64{1, 1, -1, -1}, 1, 4)
	mask, _ := tensor.FromSlice([]float64{1, 1, 1, 1}, 1, 4)

	cfg := ppo.DefaultConfig()
	cfg.ClipHigh, cfg.DualClip = 0.28, 3 // DAPO's clip-higher, verl's dual clip
	grad := tensor.MustNew[float64](1, 4)
	res, err := ppo.PolicyLoss(grad, ppo.Inputs[float64]{Logp: logp, OldLogp: old, Advantages: adv, Mask: mask}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss %.4f\n", res.Loss)
	fmt.Printf("grad %.4f\n", grad.Data)
	fmt.Printf("clipped high %.2f, low %.2f, dual %.2f, mean ratio %.2f\n",
		res.ClipFracHigh, res.ClipFracLow, res.DualClipFrac, res.MeanRatio)
	// Output:
	// loss 0.3800
	// grad [0.0000 -0.2500 0.0000 0.0000]
	// clipped high 0.25, low 0.25, dual 0.25, mean ratio 1.75
}

// Two micro-batches of a gradient-accumulation step, each told the token
// count of the whole batch, add up to the loss of the whole batch.
func ExampleReduction_tokenCount() {
	logp, _ := tensor.FromSlice([]float64{-1, -2, -1, -3, -2, -1}, 3, 2)
	old, _ := tensor.FromSlice([]float64{-1.1, -2, -0.9, -3, -2.1, -1}, 3, 2)
	adv, _ := tensor.FromSlice([]float64{1, 1, -1, -1, 0.5, 0.5}, 3, 2)
	mask, _ := tensor.FromSlice([]float64{1, 1, 1, 0, 1, 1}, 3, 2)
	in := ppo.Inputs[float64]{Logp: logp, OldLogp: old, Advantages: adv, Mask: mask}
	cfg := ppo.DefaultConfig()

	whole, _ := ppo.PolicyLoss(tensor.MustNew[float64](3, 2), in, cfg)

	cfg.TokenCount = float64(whole.Tokens) // 5 valid tokens in the whole batch
	rows := func(x tensor.Batch[float64], lo, hi int) tensor.Batch[float64] {
		return tensor.Batch[float64]{Shape: tensor.Shape{B: hi - lo, T: 2}, Data: x.Data[2*lo : 2*hi]}
	}
	part := func(lo, hi int) float64 {
		sub := ppo.Inputs[float64]{Logp: rows(logp, lo, hi), OldLogp: rows(old, lo, hi), Advantages: rows(adv, lo, hi), Mask: rows(mask, lo, hi)}
		res, _ := ppo.PolicyLoss(tensor.MustNew[float64](hi-lo, 2), sub, cfg)
		return res.Loss
	}
	fmt.Printf("whole batch %.6f, micro-batches %.6f\n", whole.Loss, part(0, 2)+part(2, 3))
	// Output:
	// whole batch -0.450584, micro-batches -0.450584
}

// The critic loss with verl's value clip of 0.5. The first token's value
// moved from 1 to 2, towards its return 3; clipped to 1.5 it is further from
// the return, so the clipped branch wins and passes no gradient.
func ExampleValueLoss() {
	v, _ := tensor.FromSlice([]float64{2.0, 0.4}, 1, 2)
	old, _ := tensor.FromSlice([]float64{1.0, 0.5}, 1, 2)
	ret, _ := tensor.FromSlice([]float64{3.0, 1.0}, 1, 2)
	mask, _ := tensor.FromSlice([]float64{1, 1}, 1, 2)
	grad := tensor.MustNew[float64](1, 2)
	res, err := ppo.ValueLoss(grad, ppo.ValueInputs[float64]{Values: v, OldValues: old, Returns: ret, Mask: mask}, ppo.DefaultValueConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss %.4f grad %.4f clipped %.2f\n", res.Loss, grad.Data, res.ClipFrac)
	// Output:
	// loss 0.6525 grad [0.0000 -0.3000] clipped 0.50
}
