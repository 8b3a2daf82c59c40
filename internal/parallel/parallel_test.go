package parallel

import (
	"sync/atomic"
	"testing"
)

type spin struct {
	out  []float64
	hits atomic.Int64
}

func (s *spin) Run(i int) {
	s.hits.Add(1)
	x := 0.0
	for k := range 200000 {
		x += float64(k) * 1e-9
	}
	s.out[i] = x
}

func TestDoRunsEveryPieceOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 64} {
		s := &spin{out: make([]float64, n)}
		Do(s, n, Workers()-1)
		if got := s.hits.Load(); got != int64(n) {
			t.Fatalf("n=%d: %d pieces ran", n, got)
		}
		for i, v := range s.out {
			if v == 0 {
				t.Fatalf("n=%d: piece %d did not run", n, i)
			}
		}
	}
}

func BenchmarkSpin(b *testing.B) {
	s := &spin{out: make([]float64, 64)}
	for b.Loop() {
		Do(s, 64, Workers()-1)
	}
}
