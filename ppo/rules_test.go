package ppo_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/internal/testkit/rulecases"
	"github.com/rlpost/rlpost/ppo"
)

// TestRules drives every CPU implementation of the loss rules — the Go
// loop in float64 and float32, the AVX2 and AVX-512 kernels, and the GSPO
// path in both storage types — through the same edge of each rule, and
// checks each against the hand-worked value. cuda's TestRulesOnDevice does the same
// for the CUDA kernels under the cudaemu emulator.
func TestRules(t *testing.T) {
	// Three blocks of eight for the AVX2 kernel; one of sixteen and one
	// of eight for the AVX-512 kernel. No tail for the Go loop.
	const n = 24
	for _, c := range rulecases.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			in64 := rulecases.Inputs(c, n)
			in32 := rulecases.To32(in64)
			type impl struct {
				name string
				run  func() (ppo.Result, float64, error)
			}
			run64 := func(level ppo.RatioLevel) func() (ppo.Result, float64, error) {
				return func() (ppo.Result, float64, error) {
					g := make([]float64, n)
					res, err := ppo.PolicyLoss(like(g, in64.Logp), in64, rulecases.Config(c, level))
					return res, g[0], err
				}
			}
			run32 := func(level ppo.RatioLevel, lanes int) func() (ppo.Result, float64, error) {
				return func() (ppo.Result, float64, error) {
					defer ppo.SetKernelLanes(ppo.SetKernelLanes(lanes))
					g := make([]float32, n)
					res, err := ppo.PolicyLoss(like(g, in32.Logp), in32, rulecases.Config(c, level))
					return res, float64(g[0]), err
				}
			}
			impls := []impl{
				{"go float64", run64(ppo.TokenRatio)},
				{"go float32", run32(ppo.TokenRatio, 0)},
			}
			if !c.TokenLevel {
				impls = append(impls, impl{"gspo float64", run64(ppo.SequenceRatio)}, impl{"gspo float32", run32(ppo.SequenceRatio, 0)})
			}
			if kernel.HasAVX2 {
				impls = append(impls, impl{"avx2", run32(ppo.TokenRatio, 8)})
			}
			if kernel.HasAVX512 {
				impls = append(impls, impl{"avx512", run32(ppo.TokenRatio, 16)})
			}
			for _, im := range impls {
				res, g, err := im.run()
				require.NoError(t, err, im.name)
				tol := 1e-12
				if im.name != "go float64" && im.name != "gspo float64" {
					tol = 2e-6 // float32 inputs and kernel.Exp
				}
				assert.InEpsilonf(t, 1+c.Loss, 1+res.Loss, tol, "%s: loss %v, want %v", im.name, res.Loss, c.Loss)
				assert.InDeltaf(t, c.Grad/n, g, tol*math.Max(1, math.Abs(c.Grad)), "%s: grad", im.name)
				assert.Equalf(t, c.ClipHigh, res.ClipFracHigh, "%s: clip high", im.name)
				assert.Equalf(t, c.ClipLow, res.ClipFracLow, "%s: clip low", im.name)
				assert.Equalf(t, c.Dual, res.DualClipFrac, "%s: dual clip", im.name)
				assert.Equalf(t, c.Capped, res.CappedFrac, "%s: capped", im.name)
			}
		})
	}
}
