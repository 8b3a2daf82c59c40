package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		require.Equal(t, int64(n), s.hits.Load(), "n=%d: pieces run", n)
		for i, v := range s.out {
			require.NotZero(t, v, "n=%d: piece %d did not run", n, i)
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
	assert.Same(t, a, f.Get(), "Get did not return the object put back")
	f.Put(new([4]int))
	f.Put(new([4]int))
	f.Put(new([4]int)) // full: dropped, no block
	var none *Free[int]
	assert.NotNil(t, none.Get(), "nil Free: Get returned nil")
	none.Put(new(int))
}

// TestDoAllocatesNothing: once warm, Do allocates nothing, even after a
// garbage collection (which empties sync.Pools but not Free lists).
func TestDoAllocatesNothing(t *testing.T) {
	s := &spin{out: make([]float64, 8)}
	Do(s, 8, Workers()-1)
	runtime.GC()
	assert.Zero(t, testing.AllocsPerRun(20, func() { Do(s, 8, Workers()-1) }), "allocations per Do")
}

func TestPick(t *testing.T) {
	a, b := NewFree[int](1), NewFree[string](1)
	assert.Same(t, b, Pick[string](a, b))
	assert.Same(t, a, Pick[int](a, b))
	assert.Nil(t, Pick[float64](a, b))
}
