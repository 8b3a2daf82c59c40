package presets_test

import (
	"fmt"

	"github.com/rlpost/rlpost/presets"
)

// A reproduction starts from the paper's preset and reads the knobs it
// needs from it.
func ExampleAVATAR() {
	p := presets.AVATAR()
	o := p.Objective
	fmt.Printf("λ_TAS %.1f, α %.1f, β %.1f, buffer %d, %d on + %d off\n",
		o.TAS.Lambda, o.Alpha, o.Loss.KLCoef, p.Buffer.Capacity, p.OnPolicy, p.OffPolicy)
	// Output: λ_TAS 0.3, α 0.6, β 0.1, buffer 10000, 4 on + 4 off
}

// APPO states two values of K2; the preset keeps both.
func ExampleAPPO() {
	p := presets.APPO()
	fmt.Println("K1 K2 K3:", p.Weights.K1, p.Weights.K2, p.Weights.K3, "ablation's K2:", p.K2AblationBest)
	fmt.Println("reward weights:", p.AccuracyWeight, p.FormatWeight, p.IoUWeight)
	// Output:
	// K1 K2 K3: 15 5 64 ablation's K2: 3
	// reward weights: 0.9 0.1 0.9
}
