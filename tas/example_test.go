package tas_test

import (
	"fmt"

	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// The TAS curve of a 10-token response with AVATAR's λ = 0.3: the opening
// (planning) and closing (synthesis) tokens weigh 1.3, the middle about 1.
// The response's GRPO advantage of 0.8 becomes a per-token advantage.
func ExampleApplySequence() {
	mask, _ := tensor.FromSlice([]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1, 10)
	shaped := tensor.MustNew[float32](1, 10)
	if err := tas.ApplySequence(shaped, []float32{0.8}, mask, tas.DefaultConfig()); err != nil {
		panic(err)
	}
	w := tensor.MustNew[float32](1, 10)
	if err := tas.Weights(w, mask, tas.DefaultConfig()); err != nil {
		panic(err)
	}
	for t := range 10 {
		fmt.Printf("t=%d  weight %.3f  advantage %.3f\n", t, w.Data[t], shaped.Data[t])
	}
	// Output:
	// t=0  weight 1.300  advantage 1.040
	// t=1  weight 1.181  advantage 0.945
	// t=2  weight 1.093  advantage 0.874
	// t=3  weight 1.033  advantage 0.827
	// t=4  weight 1.004  advantage 0.803
	// t=5  weight 1.004  advantage 0.803
	// t=6  weight 1.033  advantage 0.827
	// t=7  weight 1.093  advantage 0.874
	// t=8  weight 1.181  advantage 0.945
	// t=9  weight 1.300  advantage 1.040
}

// The five weightings of AVATAR's Table 5 on a 5-token response, λ = 0.3.
func ExampleWeights_ablation() {
	mask, _ := tensor.FromSlice([]float64{1, 1, 1, 1, 1}, 1, 5)
	w := tensor.MustNew[float64](1, 5)
	for _, s := range []tas.Shape{tas.Uniform, tas.LinearDecay, tas.LinearIncline, tas.Inverse, tas.Parabolic} {
		if err := tas.Weights(w, mask, tas.Config{Lambda: 0.3, Shape: s}); err != nil {
			panic(err)
		}
		fmt.Printf("%-14s %.3f\n", s, w.Data)
	}
	// Output:
	// uniform        [1.000 1.000 1.000 1.000 1.000]
	// linear_decay   [1.300 1.225 1.150 1.075 1.000]
	// linear_incline [1.000 1.075 1.150 1.225 1.300]
	// inverse        [1.000 1.225 1.300 1.225 1.000]
	// parabolic      [1.300 1.075 1.000 1.075 1.300]
}
