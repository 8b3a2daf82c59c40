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

// logAVX is the AVX-512 logarithm (logMean's loop) for one number, in all
// eight lanes, which must agree.
func logAVX(x float64) float64 {
	var src, dst [8]float64
	for i := range src {
		src[i] = x
	}
	logs64AVX512(&dst[0], &src[0], 8, 1, &avxInvC[0], &avxLogC[0])
	for _, y := range dst[1:] {
		if math.Float64bits(y) != math.Float64bits(dst[0]) {
			return math.NaN()
		}
	}
	return dst[0]
}

// logImpls are the logarithms this build runs: logs, and the AVX-512 loop
// where the processor has it.
func logImpls() map[string]func(float64) float64 {
	m := map[string]func(float64) float64{"logs": logf}
	if hasAVX512 {
		m["AVX-512"] = logAVX
	}
	return m
}

// refLog is math.Log, with subnormals scaled into the normal range first
// (math.Log on amd64 is wrong for them).
func refLog(x float64) float64 {
	if x < 0x1p-1022 {
		return math.Log(x*0x1p64) - 64*math.Ln2
	}
	return math.Log(x)
}

// logTol is logs' error bound: a few ulps of log x plus the absolute
// rounding of the table entries.
func logTol(want float64) float64 { return 1e-16 + 2.3e-16*math.Abs(want) }

// TestLogAccuracy checks both logarithms against math.Log at every
// exponent, densely in (0, 1], at the edges of both bucket layouts and near
// 1, and 0 for 0.
func TestLogAccuracy(t *testing.T) {
	for name, logf := range logImpls() {
		t.Run(name, func(t *testing.T) { testLogAccuracy(t, logf) })
	}
}

func testLogAccuracy(t *testing.T, logf func(float64) float64) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(x float64) {
		t.Helper()
		got, want := logf(x), refLog(x)
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
		lo = math.Float64frombits(0x3fe8000000000000 + uint64(i)<<(52-logBits))
		check(lo)
		check(math.Nextafter(lo, 0))
		check(math.Nextafter(lo, 2))
	}
	check(0.75)
	check(1.5)
	check(math.Nextafter(1.5, 0))
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
}

// TestLogFloat32 checks logs on float32 input.
func TestLogFloat32(t *testing.T) {
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
	if hasAVX512 {
		b.Run("AVX-512", func(b *testing.B) {
			for b.Loop() {
				logMean(dst, 1)
				copy(dst, xs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(xs)), "ns/log")
		})
	}
	b.Run("math.Log", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				dst[i] = math.Log(x)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(xs)), "ns/log")
	})
}

// TestVectorLoops checks plogp, logMean, addTo and dot, which run AVX-512
// loops on float32 rows and float64 means where the processor has them,
// against float64 loops over math.Log, at lengths around the eight lanes.
func TestVectorLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 7, 8, 9, 16, 63, 1000, 32003} {
		x := make([]float32, n)
		s := 0.0
		for i := range x {
			if r.IntN(10) > 0 {
				x[i] = r.Float32() * float32(math.Pow(10, -float64(r.IntN(12))))
			}
			s += float64(x[i])
		}
		var want float64
		for _, p := range x {
			if p > 0 {
				want += float64(p) * math.Log(float64(p))
			}
		}
		if got := plogp(x); math.Abs(got-want) > 1e-12*(1+s) {
			t.Errorf("n %d: plogp = %.17g, want %.17g", n, got, want)
		}
		sum := make([]float64, n)
		addTo(sum, x)
		addTo(sum, x)
		addTo(sum, x)
		y := make([]float64, n)
		var wantDot float64
		for i := range x {
			if sum[i] != 3*float64(x[i]) {
				t.Fatalf("n %d: addTo thrice gives %v at %d, want 3·%v", n, sum[i], i, x[i])
			}
			y[i] = r.Float64()
			wantDot += float64(x[i]) * y[i]
		}
		if got := dot(x, y); math.Abs(got-wantDot) > 1e-13*(1+math.Abs(wantDot)) {
			t.Errorf("n %d: dot = %.17g, want %.17g", n, got, wantDot)
		}
		logMean(sum, 3)
		for i, p := range x {
			want := 0.0
			if p > 0 {
				want = math.Log(float64(p))
			}
			if math.Abs(sum[i]-want) > 2*logTol(want) {
				t.Fatalf("n %d: logMean gives %.17g at %d, want log %v = %.17g", n, sum[i], i, p, want)
			}
		}
	}
}

// TestCheckedPlogp: the one-read check of a float32 row passes a good
// distribution with its Σ p log p, and turns down every row checkDist
// turns down, the bad entry in the lanes or in the tail.
func TestCheckedPlogp(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{8, 13, 64, 1001} {
		x := make([]float32, n)
		s := 0.0
		for i := range x {
			x[i] = r.Float32() + 0.01
			s += float64(x[i])
		}
		for i := range x {
			x[i] = float32(float64(x[i]) / s)
		}
		got, ok := checkedPlogp(x, n, 1e-5)
		if hasAVX512 {
			if want := plogp(x); !ok || math.Abs(got-want) > 1e-12 {
				t.Fatalf("n %d: checkedPlogp = %v, %v, want %v, true", n, got, ok, want)
			}
		} else if ok {
			t.Fatal("checkedPlogp ran without AVX-512")
		}
		if _, ok := checkedPlogp(x, n+1, 1e-5); ok {
			t.Errorf("n %d: passed a row of the wrong length", n)
		}
		for _, at := range []int{0, 3, n - 1} {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), -1e-9, 0.5} {
				y := append([]float32(nil), x...)
				y[at] = bad
				if _, ok := checkedPlogp(y, n, 1e-5); ok {
					t.Errorf("n %d: passed %v at %d", n, bad, at)
				}
				if checkDist(y, 0, 0, n, 1e-5) == nil {
					t.Errorf("n %d: checkDist passed %v at %d", n, bad, at)
				}
			}
		}
	}
}
