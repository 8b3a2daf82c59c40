//go:build amd64 && !purego

package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// exp32Tol bounds the relative error of the policy kernel's float32
// exponential against math.Exp of the same float32 argument: one float32
// ulp at the bottom of a binade (2^-23 ≈ 1.19e-7). Measured: 7.3e-8.
const exp32Tol = 1.2e-7

func TestExp32Accuracy(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	src := make([]float32, 0, 3<<16)
	for range cap(src) / 3 {
		src = append(src, float32((rng.Float64()*2-1)*20), float32(rng.Float64()*(88+87.3)-87.3),
			float32((rng.Float64()*2-1)*1e-3))
	}
	dst := make([]float32, len(src))
	exp32AVX2(dst, src)
	worst, at := 0.0, float32(0)
	for i, x := range src {
		want := math.Exp(float64(x))
		if e := relErr(float64(dst[i]), want); e > worst {
			worst, at = e, x
		}
	}
	t.Logf("worst relative error %.3g (at %v) over %d points", worst, at, len(src))
	if worst > exp32Tol {
		t.Errorf("worst relative error %.3g at %v, above %.3g", worst, at, exp32Tol)
	}
}

func TestExp32Range(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	src := []float32{-1000, -88, -87.8, -87.3, -80, 0, 80, 88, 0.5}
	dst := make([]float32, len(src)+7)
	exp32AVX2(dst, append(src, make([]float32, 7)...))
	for i, x := range src {
		got, want := float64(dst[i]), math.Exp(float64(x))
		switch {
		case x < -87.7:
			if got != 0 {
				t.Errorf("exp32(%v) = %v, want 0", x, got)
			}
		default:
			if relErr(got, want) > exp32Tol {
				t.Errorf("exp32(%v) = %v, want %v", x, got, want)
			}
		}
	}
}

// TestPolicyTokensSmallKL: the kernel's k3 estimate e^{−x} + x − 1 ≈ x²/2
// and its derivative 1 − e^{−x} keep float32's relative precision for small
// x, where taking e^{−x} − 1 in float32 would lose all of it.
func TestPolicyTokensSmallKL(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	lanes := []int{8}
	if HasAVX512 {
		lanes = append(lanes, 16)
	}
	for _, x := range []float64{1e-6, -1e-6, 3e-4, -3e-4, 0.01, -0.01, 0.3, -0.3, 0.5, -0.5, 2, -2, 30} {
		for _, w := range lanes {
			smallKL(t, x, w)
		}
	}
}

// smallKL checks the k3 estimate of a row of 24 tokens at x with the
// kernel of the given width.
func smallKL(t *testing.T, x float64, lanes int) {
	const n = 24
	lp, ref := make([]float32, n), make([]float32, n)
	zero, one, g := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		lp[i], one[i] = -1, 1
	}
	for i := range n {
		// The argument the kernel sees is x rounded through float32.
		ref[i] = lp[i] - float32(x)
	}
	xs := float64(lp[0] - ref[0])
	k := &PolicyTokens{Logp: &lp[0], Old: &lp[0], Adv: &zero[0], Mask: &one[0], Ref: &ref[0], Grad: &g[0],
		N: n, HasRef: 1, KL: 3, Lo: Splat(0.8), Hi: Splat(1.2), Dual: Splat(math.Inf(1)),
		Clamp: Splat(20), NegClamp: Splat(-20), Beta: Splat(1), Coef: Splat(1), KLClamp: Splat(math.Inf(1)),
		CapAt: Splat(math.Inf(1)), CapTo: Splat(math.Inf(1)), BehaveMax: Splat(1)}
	if !k.RunLanes(lanes) || k.Bad != 0 {
		t.Fatalf("x=%v, %d lanes: kernel did not run or flagged %b", x, lanes, k.Bad)
	}
	wantK := math.Expm1(-xs) + xs
	wantDK := -math.Expm1(-xs)
	if e := relErr(Sum(k.KLSum)/n, wantK); e > 1e-6 {
		t.Errorf("x=%v, %d lanes: k = %v, want %v (relative error %.3g)", xs, lanes, Sum(k.KLSum)/n, wantK, e)
	}
	for i, gi := range g {
		if e := relErr(float64(gi), wantDK); e > 1e-6 {
			t.Errorf("x=%v, %d lanes: dk[%d] = %v, want %v (relative error %.3g)", xs, lanes, i, gi, wantDK, e)
		}
	}
}
