package workers_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peak records the most goroutines inside Run at once.
type peak struct{ in, max atomic.Int64 }

func (p *peak) Run(int) {
	n := p.in.Add(1)
	for {
		m := p.max.Load()
		if n <= m || p.max.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(20 * time.Microsecond) // long enough for helpers to overlap
	p.in.Add(-1)
}

// TestSetMaxBoundsOneCall: under SetMax(n) no row-engine call has more
// than n goroutines inside it, and a bound of 1 keeps it on its caller.
func TestSetMaxBoundsOneCall(t *testing.T) {
	prev := workers.SetMax(0)
	defer workers.SetMax(prev)
	assert.Equal(t, runtime.GOMAXPROCS(0), workers.Max())
	for _, n := range []int{1, 2} {
		workers.SetMax(n)
		assert.LessOrEqual(t, workers.Max(), n)
		var p peak
		parallel.Rows(&p, 4096, 64) // 2^18 tokens: far over MinTokens
		assert.LessOrEqual(t, p.max.Load(), int64(n), "SetMax(%d)", n)
		assert.Positive(t, p.max.Load())
	}
	assert.Equal(t, 2, workers.SetMax(-5), "the previous bound")
	assert.Equal(t, runtime.GOMAXPROCS(0), workers.Max(), "n ≤ 0 restores the default")
}

// TestSetMaxSameBits: a compute function gives the same bits at any bound.
func TestSetMaxSameBits(t *testing.T) {
	prev := workers.SetMax(0)
	defer workers.SetMax(prev)
	const B, T = 64, 512
	rewards, values, mask := tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
	for i := range rewards.Data {
		rewards.Data[i] = float64(i%7) * 0.1
		values.Data[i] = float64(i%5) * 0.2
		mask.Data[i] = 1
	}
	run := func() []float64 {
		adv, ret := tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
		require.NoError(t, gae.Advantages(adv, ret, rewards, values, mask, gae.Config{Gamma: 0.99, Lambda: 0.95}))
		return adv.Data
	}
	want := run()
	workers.SetMax(1)
	assert.Equal(t, want, run())
}
