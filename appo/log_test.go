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
	logs64AVX512(&dst[0], &src[0], 8, 1, &avxLog[0])
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
	edges := []float64{0.75, 1.5, 1.46875}
	for i := range logBuckets {
		edges = append(edges, math.Float64frombits(logOff+uint64(i)<<(52-logBits)))
	}
	for j := range 16 {
		edges = append(edges, math.Float64frombits(math.Float64bits(0.734375)+uint64(j)<<48))
	}
	for _, x := range edges {
		for _, y := range []float64{x, 2 * x, x / 2, x / 1024} {
			check(y)
			check(math.Nextafter(y, 0))
			check(math.Nextafter(y, 4))
		}
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

// randomRow returns n probabilities, a tenth of them 0 and the rest spread
// over twelve decades, and their sum.
func randomRow(r *rand.Rand, n int) ([]float32, float64) {
	x := make([]float32, n)
	s := 0.0
	for i := range x {
		if r.IntN(10) > 0 {
			x[i] = r.Float32() * float32(math.Pow(10, -float64(r.IntN(12))))
		}
		s += float64(x[i])
	}
	return x, s
}

// TestRowSums checks the row kernel, AVX-512 lanes on float32 where the
// processor has them, against a float64 loop over math.Log, at lengths
// around the eight lanes; and that a negative or non-finite entry, in the
// lanes or in the tail, makes its sum NaN.
func TestRowSums(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 7, 8, 9, 16, 63, 1000, 32003} {
		x, sum := randomRow(r, n)
		var want float64
		for _, p := range x {
			if p > 0 {
				want += float64(p) * math.Log(float64(p))
			}
		}
		s, gotSum := rowSums(x, x, true)
		if math.Abs(s-want) > 1e-12*(1+sum) || math.Abs(gotSum-sum) > 1e-12*sum {
			t.Errorf("n %d: rowSums = %.17g, %.17g, want %.17g, %.17g", n, s, gotSum, want, sum)
		}
		if s, gotSum := rowSums(x, x, false); s != 0 || math.Abs(gotSum-sum) > 1e-12*sum {
			t.Errorf("n %d: rowSums without logs = %v, %v, want 0, %v", n, s, gotSum, sum)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1e-30} {
				y := append([]float32(nil), x...)
				y[at] = bad
				for _, withLogs := range []bool{true, false} {
					if _, s := rowSums(y, y, withLogs); !math.IsNaN(s) {
						t.Errorf("n %d: %v at %d gives sum %v, want NaN", n, bad, at, s)
					}
				}
			}
		}
	}
}

// TestSlotBlock checks the slot kernel, AVX-512 lanes on float32 where the
// processor has them, against float64 loops over math.Log, at block
// lengths around the eight lanes, offsets and member counts.
func TestSlotBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 8, 9, 16, 24, 63, 512, 1001} {
		for _, m := range []int{1, 2, 3, 8} {
			lo := r.IntN(20)
			members := make([][]float32, m)
			for e := range members {
				members[e], _ = randomRow(r, lo+n+r.IntN(5))
			}
			members[0][lo] = 0 // a word no member has
			for e := range members {
				members[e][lo] = 0
			}
			out := make([]float64, m)
			for e := range out {
				out[e] = float64(e) // slotBlock adds to it
			}
			acc := make([]float64, n)
			var next [][]float32 // the slot to prefetch: none, or another
			if m%2 == 0 {
				next = members[:m/2]
			}
			slotBlock(acc, members, lo, lo+n, out, next)
			wantDot := make([]float64, m)
			for v := lo; v < lo+n; v++ {
				mean := 0.0
				for _, p := range members {
					mean += float64(p[v])
				}
				mean /= float64(m)
				lg := 0.0
				if mean > 0 {
					lg = math.Log(mean)
				}
				if math.Abs(acc[v-lo]-lg) > 2*logTol(lg) {
					t.Fatalf("n %d, m %d: log p̄ at %d = %.17g, want %.17g", n, m, v, acc[v-lo], lg)
				}
				for e, p := range members {
					wantDot[e] += float64(p[v]) * lg
				}
			}
			for e := range out {
				if want := float64(e) + wantDot[e]; math.Abs(out[e]-want) > 1e-12*(1+math.Abs(want)) {
					t.Errorf("n %d, m %d: out[%d] = %.17g, want %.17g", n, m, e, out[e], want)
				}
			}
		}
	}
}

// BenchmarkKernels measures the row and slot kernels of the block pass on
// one block in the first-level cache: the compute cost per word, with no
// memory traffic.
func BenchmarkKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	members := make([][]float32, 8)
	for e := range members {
		members[e], _ = randomRow(r, blockWords)
	}
	perWord := func(b *testing.B, words int) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(words), "ns/word")
	}
	b.Run("row", func(b *testing.B) {
		for b.Loop() {
			rowSums(members[0], members[1], true)
		}
		perWord(b, blockWords)
	})
	b.Run("row-check", func(b *testing.B) {
		for b.Loop() {
			rowSums(members[0], members[1], false)
		}
		perWord(b, blockWords)
	})
	b.Run("slot-8", func(b *testing.B) {
		var acc [blockWords]float64
		out := make([]float64, len(members))
		for b.Loop() {
			slotBlock(acc[:], members, 0, blockWords, out, members)
		}
		perWord(b, blockWords)
	})
}
