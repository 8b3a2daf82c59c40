package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// relErr is the relative error of got against math.Exp's want.
func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestExpAccuracy(t *testing.T) {
	const tol = 2e-9
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, 0, 1<<16)
	for range cap(src) / 2 {
		src = append(src, (rng.Float64()*2-1)*20, (rng.Float64()*2-1)*708)
	}
	dst := make([]float64, len(src))
	ExpSlice(dst, src)
	gen := make([]float64, len(src))
	expGeneric(gen, src)
	worst := 0.0
	for i, x := range src {
		want := math.Exp(x)
		for _, got := range []float64{dst[i], gen[i], Exp(x)} {
			if e := relErr(got, want); e > tol {
				t.Fatalf("exp(%v) = %v, want %v (relative error %.3g)", x, got, want, e)
			} else {
				worst = max(worst, e)
			}
		}
	}
	t.Logf("worst relative error %.3g over %d points", worst, len(src))
}

func TestExpSpecialValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	src := []float64{0, 1, -1, 709.7, 709.79, 710, 1000, inf, -708.3, -708.4, -745, -1000, -inf, nan, 20, -20, math.SmallestNonzeroFloat64}
	for _, f := range []struct {
		name string
		fn   func(dst, src []float64)
	}{{"ExpSlice", ExpSlice}, {"expGeneric", expGeneric}, {"Exp", func(d, s []float64) {
		for i, x := range s {
			d[i] = Exp(x)
		}
	}}} {
		dst := make([]float64, len(src))
		f.fn(dst, src)
		for i, x := range src {
			got, want := dst[i], math.Exp(x)
			switch {
			case math.IsNaN(x):
				if !math.IsNaN(got) {
					t.Errorf("%s(NaN) = %v", f.name, got)
				}
			case x > 709.78:
				if !math.IsInf(got, 1) {
					t.Errorf("%s(%v) = %v, want +Inf", f.name, x, got)
				}
			case x < -708.39:
				if got != 0 {
					t.Errorf("%s(%v) = %v, want 0", f.name, x, got)
				}
			default:
				if relErr(got, want) > 2e-9 {
					t.Errorf("%s(%v) = %v, want %v", f.name, x, got, want)
				}
			}
		}
	}
}

func TestExpSliceTails(t *testing.T) {
	for n := range 11 {
		src := make([]float64, n)
		for i := range src {
			src[i] = float64(i) - 3.5
		}
		dst := make([]float64, n+1)
		dst[n] = 42
		ExpSlice(dst, src)
		for i, x := range src {
			if relErr(dst[i], math.Exp(x)) > 2e-9 {
				t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], math.Exp(x))
			}
		}
		if dst[n] != 42 {
			t.Fatalf("n=%d: wrote past len(src)", n)
		}
	}
}

func BenchmarkExpSlice(b *testing.B) {
	src := make([]float64, 256)
	for i := range src {
		src[i] = float64(i%40)/10 - 2
	}
	dst := make([]float64, len(src))
	for b.Loop() {
		ExpSlice(dst, src)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)), "ns/elem")
}

func BenchmarkExpGeneric(b *testing.B) {
	src := make([]float64, 256)
	for i := range src {
		src[i] = float64(i%40)/10 - 2
	}
	dst := make([]float64, len(src))
	for b.Loop() {
		expGeneric(dst, src)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(src)), "ns/elem")
}
