package klctl_test

import (
	"fmt"

	"github.com/rlpost/rlpost/klctl"
)

// A trainer reads β before each step and reports the step's KL after it.
func Example() {
	ctl, _ := klctl.Adaptive(klctl.DefaultCoef, klctl.DefaultTarget, klctl.DefaultHorizon)
	for _, kl := range []float64{0.3, 0.3, 0.05} {
		beta := ctl.Value() // the penalty −β·KL of this step
		_, _ = ctl.Update(kl, 1000)
		fmt.Printf("β %.7f → %.7f\n", beta, ctl.Value())
	}
	// Output:
	// β 0.0010000 → 0.0010200
	// β 0.0010200 → 0.0010404
	// β 0.0010404 → 0.0010196
}
