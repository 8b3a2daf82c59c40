//go:build cuda || cudaemu

package cuda

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/testkit/rulecases"
	"github.com/rlpost/rlpost/ppo"
)

// TestRulesOnDevice drives the CUDA policy kernels (token and sequence
// level) through the same edge of each loss rule as ppo's TestRules, and
// checks each against the hand-worked value. Under -tags cudaemu it runs on
// the CPU emulator.
func TestRulesOnDevice(t *testing.T) {
	c := device(t)
	const n = 8
	for _, rc := range rulecases.Cases() {
		t.Run(rc.Name, func(t *testing.T) {
			if rc.CPUOnly {
				_, err := c.PolicyLoss(output(t, c, 1, n), uploadPolicy(t, c, rulecases.To32(rulecases.Inputs(rc, n))), rulecases.Config(rc, ppo.TokenRatio))
				require.Error(t, err, "the device kernels do not implement this rule and must say so")
				return
			}
			in := rulecases.To32(rulecases.Inputs(rc, n))
			dev := uploadPolicy(t, c, in)
			levels := []ppo.RatioLevel{ppo.TokenRatio, ppo.SequenceRatio}
			if rc.TokenLevel {
				levels = levels[:1]
			}
			for _, level := range levels {
				grad := output(t, c, 1, n)
				res, err := c.PolicyLoss(grad, dev, rulecases.Config(rc, level))
				require.NoError(t, err, "level %v", level)
				g := float64(download(t, grad)[0])
				assert.InEpsilonf(t, 1+rc.Loss, 1+res.Loss, 2e-6, "level %v: loss %v, want %v", level, res.Loss, rc.Loss)
				assert.InDeltaf(t, rc.Grad/n, g, 2e-6*math.Max(1, math.Abs(rc.Grad)), "level %v: grad", level)
				assert.Equalf(t, rc.ClipHigh, res.ClipFracHigh, "level %v: clip high", level)
				assert.Equalf(t, rc.ClipLow, res.ClipFracLow, "level %v: clip low", level)
				assert.Equalf(t, rc.Dual, res.DualClipFrac, "level %v: dual clip", level)
				assert.Equalf(t, rc.Capped, res.CappedFrac, "level %v: capped", level)
			}
		})
	}
}
