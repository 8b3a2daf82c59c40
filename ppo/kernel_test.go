package ppo_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/ppo"
)

// kernelWidths are the widths of the assembly kernels this build and
// processor run: none, 8 (AVX2), or 8 and 16 (AVX-512).
func kernelWidths() []int {
	var w []int
	if kernel.HasAVX2 {
		w = append(w, 8)
	}
	if kernel.HasAVX512 {
		w = append(w, 16)
	}
	return w
}

// TestAssemblyMatchesGo runs every configuration of the gradient tests, on
// wider batches whose lengths are not multiples of 4 and whose padding holds
// NaN and −Inf, through each assembly kernel and through the Go loop, in
// float32, and compares each with the float64 result; the kernels of both
// widths must give the same bits.
func TestAssemblyMatchesGo(t *testing.T) {
	if !kernel.HasAVX2 {
		t.Skip("no AVX2 kernel on this processor or build")
	}
	// The worst relative error of each float32 path's gradient against
	// the float64 loop, over entries above 1e-6 of the batch's largest.
	// Also the worst relative difference between the two float32 paths.
	var worstAsm, worstGo, asmVsGo float64
	defer func() {
		t.Logf("gradient, worst relative error against float64: assembly %.3g, Go loop %.3g; assembly against Go loop %.3g",
			worstAsm, worstGo, asmVsGo)
	}()
	for _, c := range gradCases() {
		for _, shape := range [][2]int{{3, 4}, {5, 37}, {2, 130}} {
			t.Run(fmt.Sprintf("%s/%dx%d", c.name, shape[0], shape[1]), func(t *testing.T) {
				spec := c.spec
				spec.b, spec.t, spec.garbageInPadding = shape[0], shape[1], true
				in64 := randomInputs(spec)
				want := make([]float64, in64.Logp.Size())
				ref, err := ppo.PolicyLoss(like(want, in64.Logp), in64, c.cfg)
				if err != nil {
					t.Fatal(err)
				}
				in := to32(in64)
				run := func(lanes int) (ppo.Result, []float32) {
					defer ppo.SetKernelLanes(ppo.SetKernelLanes(lanes))
					g := make([]float32, in.Logp.Size())
					res, err := ppo.PolicyLoss(like(g, in.Logp), in, c.cfg)
					if err != nil {
						t.Fatal(err)
					}
					return res, g
				}
				asm, gAsm := run(8)
				gor, gGo := run(0)
				if kernel.HasAVX512 {
					wide, gWide := run(16)
					require.Equal(t, asm, wide, "result, 16 lanes against 8")
					for k := range gAsm {
						require.Equalf(t, math.Float32bits(gAsm[k]), math.Float32bits(gWide[k]), "grad[%d]: %v (16 lanes), %v (8 lanes)", k, gWide[k], gAsm[k])
					}
				}
				big := 0.0
				for _, w := range want {
					big = max(big, math.Abs(w))
				}
				for k, w := range want {
					if math.Abs(w) > 1e-6*big {
						worstAsm = max(worstAsm, math.Abs(float64(gAsm[k])-w)/math.Abs(w))
						worstGo = max(worstGo, math.Abs(float64(gGo[k])-w)/math.Abs(w))
						asmVsGo = max(asmVsGo, math.Abs(float64(gAsm[k]-gGo[k]))/math.Abs(w))
					}
				}
				for _, r := range []struct {
					name string
					res  ppo.Result
					g    []float32
				}{{"assembly", asm, gAsm}, {"Go", gor, gGo}} {
					if !relClose(r.res.Loss, ref.Loss, 1e-5, 1e-7) {
						t.Errorf("%s loss %.9g, float64 %.9g", r.name, r.res.Loss, ref.Loss)
					}
					for k, v := range r.g {
						if !relClose(float64(v), want[k], 1e-5, 1e-7) {
							t.Fatalf("%s grad[%d] = %.9g, float64 %.9g", r.name, k, v, want[k])
						}
					}
					// Float32 inputs round the log-ratios, so a token can
					// sit on the other side of a bound; allow one.
					if math.Abs(float64(r.res.ClipFracHigh-ref.ClipFracHigh)*float64(ref.Tokens)) > 1 ||
						math.Abs(float64(r.res.ClipFracLow-ref.ClipFracLow)*float64(ref.Tokens)) > 1 ||
						math.Abs(float64(r.res.CappedFrac-ref.CappedFrac)*float64(ref.Tokens)) > 1 {
						t.Errorf("%s stats %+v, float64 %+v", r.name, r.res.Stats, ref.Stats)
					}
					if !relClose(r.res.KL, ref.KL, 1e-5, 1e-7) || !relClose(r.res.MeanRatio, ref.MeanRatio, 1e-5, 1e-7) ||
						!relClose(r.res.ApproxKL, ref.ApproxKL, 1e-4, 1e-6) || !relClose(r.res.MaxBehaveWeight, ref.MaxBehaveWeight, 1e-5, 0) {
						t.Errorf("%s stats %+v, float64 %+v", r.name, r.res.Stats, ref.Stats)
					}
				}
			})
		}
	}
}

// TestBitIdenticalAcrossRunsAndCPUs: the same input gives the same bits on
// every call, with one CPU or all, through the AVX2 kernel or the AVX-512
// one.
func TestBitIdenticalAcrossRunsAndCPUs(t *testing.T) {
	in := to32(randomInputs(batchSpec{b: 40, t: 1031, ref: true, prox: true, weights: true, spread: 0.3, nonPrefix: true, seed: 31}))
	cfg := ppo.DefaultConfig()
	cfg.KLCoef, cfg.DualClip = 0.01, 2
	var first ppo.Result
	var firstGrad []float32
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer ppo.SetKernelLanes(ppo.SetKernelLanes(kernel.PolicyLanes))
	for i, procs := range []int{1, 2, 4, 1, 2, 1, 2} {
		runtime.GOMAXPROCS(procs)
		if i >= 5 && kernel.HasAVX512 {
			ppo.SetKernelLanes(8) // the last two runs on the eight-lane kernel
		}
		g := make([]float32, in.Logp.Size())
		res, err := ppo.PolicyLoss(like(g, in.Logp), in, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first, firstGrad = res, g
			continue
		}
		if res != first {
			t.Fatalf("run %d, GOMAXPROCS=%d: result %+v, first run %+v", i, procs, res, first)
		}
		for k := range g {
			if math.Float32bits(g[k]) != math.Float32bits(firstGrad[k]) {
				t.Fatalf("run %d, GOMAXPROCS=%d: grad[%d] = %v, first run %v", i, procs, k, g[k], firstGrad[k])
			}
		}
	}
}

// TestRowAccFillsCacheLines: rows written by different workers must not
// share a cache line.
func TestRowAccFillsCacheLines(t *testing.T) {
	if n := ppo.RowAccSize(); n%64 != 0 {
		t.Errorf("rowAcc is %d bytes, not a multiple of a 64-byte cache line", n)
	}
}
