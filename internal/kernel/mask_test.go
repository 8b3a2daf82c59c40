package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestCountMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for n := range 70 {
		m := make([]float32, n)
		want := 0
		for i := range m {
			if rng.IntN(2) == 0 {
				m[i] = 1
				want++
			}
		}
		if got := CountMask(m); got != want {
			t.Fatalf("n=%d: CountMask = %d, want %d", n, got, want)
		}
		for _, bad := range []float32{0.5, -1, 2, float32(math.NaN()), float32(math.Inf(1)), -0.0001} {
			if n == 0 {
				break
			}
			k := rng.IntN(n)
			old := m[k]
			m[k] = bad
			if got := CountMask(m); got != -1 {
				t.Fatalf("n=%d: %v at %d counted as %d", n, bad, k, got)
			}
			m[k] = old
		}
	}
	if CountMask([]float32{float32(math.Copysign(0, -1)), 1}) != 1 {
		t.Error("−0 is a valid 0")
	}
}

func BenchmarkCountMask(b *testing.B) {
	m := make([]float32, 4096)
	for i := range 3000 {
		m[i] = 1
	}
	for b.Loop() {
		CountMask(m)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/4096, "ns/elem")
}
