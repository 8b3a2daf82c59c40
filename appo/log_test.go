package appo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// logf is logs for one number.
func logf(x float64) float64 {
	var d [1]float64
	logs(d[:], []float64{x})
	return d[0]
}

// logTol is logs' error bound: a few ulps of log x plus the absolute
// rounding of the table entries.
func logTol(want float64) float64 { return 1e-16 + 2.3e-16*math.Abs(want) }

func TestLogAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(x float64) {
		t.Helper()
		got, want := logf(x), math.Log(x)
		if !(math.Abs(got-want) <= logTol(want)) {
			t.Fatalf("logf(%v) = %.17g, math.Log = %.17g, error %.3g", x, got, want, got-want)
		}
	}
	// Random mantissas at every exponent of a probability and beyond.
	for range 200000 {
		check(math.Ldexp(1+r.Float64(), r.IntN(2098)-1074)) // 2^-1074 .. 2^1023·(1, 2)
	}
	// Uniform in (0, 1], where probabilities live, densely.
	for range 200000 {
		check(1 - r.Float64())
	}
	// Around 1 (the buckets with c = 1), around the bucket edges and
	// the ends of z's range, and at powers of two.
	for _, x := range []float64{1, math.Nextafter(1, 0), math.Nextafter(1, 2), 1 + 1e-12, 1 - 1e-12, 0.9999, 1.0001,
		1 - 1.0/256, 1 + 1.0/128, 0.6875, math.Nextafter(0.6875, 0), 1.375, math.Nextafter(1.375, 0),
		0.5, 2, 0.25, 1.0 / 32000, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, math.MaxFloat64, 1e-45, 1.4e-45} {
		check(x)
	}
	for i := range logBuckets {
		lo := math.Float64frombits(logOff + uint64(i)<<(52-logBits))
		check(lo)
		check(math.Nextafter(lo, 0))
		check(math.Nextafter(lo, 2))
	}
	// Relative accuracy near 1, where log x ≈ x − 1 is tiny.
	for _, d := range []float64{1e-15, 1e-10, 1e-5, 3e-3} {
		for _, x := range []float64{1 + d, 1 - d} {
			got, want := logf(x), math.Log(x)
			if math.Abs(got-want) > 4e-16*math.Abs(want) {
				t.Errorf("logf(%v) = %.17g, math.Log = %.17g: relative error %.3g", x, got, want, (got-want)/want)
			}
		}
	}
	if got := logf(0); got != 0 {
		t.Errorf("logs gives %v for 0, want 0 (0·log 0 = 0 in the KL sums)", got)
	}
	// float32 input, in place over float64.
	x32 := []float32{0.25, 0, 1e-30, 1}
	got := make([]float64, 4)
	logs(got, x32)
	for i, x := range x32 {
		want := 0.0
		if x > 0 {
			want = math.Log(float64(x))
		}
		if math.Abs(got[i]-want) > logTol(want) {
			t.Errorf("logs(float32 %v) = %v, want %v", x, got[i], want)
		}
	}
}

func BenchmarkLog(b *testing.B) {
	xs := make([]float64, 4096)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range xs {
		xs[i] = r.Float64() / 1000
	}
	dst := make([]float64, len(xs))
	b.Run("logs", func(b *testing.B) {
		for b.Loop() {
			logs(dst, xs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(xs)), "ns/log")
	})
	b.Run("math.Log", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				dst[i] = math.Log(x)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(xs)), "ns/log")
	})
}
