package parallel

import (
	"runtime"
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

func TestFreeRecycles(t *testing.T) {
	f := NewFree[[4]int](2)
	a := f.Get()
	a[0] = 7
	f.Put(a)
	if b := f.Get(); b != a {
		t.Error("Get did not return the object put back")
	}
	f.Put(new([4]int))
	f.Put(new([4]int))
	f.Put(new([4]int)) // full: dropped, no block
	var none *Free[int]
	if none.Get() == nil {
		t.Error("nil Free: Get returned nil")
	}
	none.Put(new(int))
}

// TestDoAllocatesNothing: once warm, Do allocates nothing, even after a
// garbage collection (which empties sync.Pools but not Free lists).
func TestDoAllocatesNothing(t *testing.T) {
	s := &spin{out: make([]float64, 8)}
	Do(s, 8, Workers()-1)
	runtime.GC()
	if n := testing.AllocsPerRun(20, func() { Do(s, 8, Workers()-1) }); n != 0 {
		t.Errorf("%v allocations per Do", n)
	}
}

func TestPick(t *testing.T) {
	a, b := NewFree[int](1), NewFree[string](1)
	if Pick[string](a, b) != b || Pick[int](a, b) != a || Pick[float64](a, b) != nil {
		t.Error("Pick chose the wrong list")
	}
}
