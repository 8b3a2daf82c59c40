package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type countRows struct{ hits []atomic.Int32 }

func (c *countRows) Run(r int) { c.hits[r].Add(1) }

// TestRowsRunsEveryRowOnce: whatever the split, every row runs exactly once,
// for calls that stay on the caller and calls that go to the pool.
func TestRowsRunsEveryRowOnce(t *testing.T) {
	for _, tc := range []struct{ rows, width int }{
		{0, 10}, {1, 1}, {7, 3}, {64, 4096}, {16384, 16}, {1000, 1 << 20}, {5, 0},
	} {
		c := &countRows{hits: make([]atomic.Int32, tc.rows)}
		Rows(c, tc.rows, tc.width)
		for r := range c.hits {
			require.EqualValuesf(t, 1, c.hits[r].Load(), "rows %d width %d: row %d", tc.rows, tc.width, r)
		}
	}
}

func TestChunk(t *testing.T) {
	assert.Equal(t, 1, Chunk(64, 4096), "long rows go one at a time")
	c := Chunk(16384, 16)
	assert.Equal(t, chunkTokens/16, c, "short rows are grouped to chunkTokens tokens")
	assert.GreaterOrEqual(t, 16384/c, piecesPerWorker*Workers(), "enough pieces to balance")
	assert.Equal(t, 1, Chunk(3, 1), "never below one row")
}

func TestRowsAllocatesNothing(t *testing.T) {
	c := &countRows{hits: make([]atomic.Int32, 4096)}
	Rows(c, 4096, 64)
	runtime.GC()
	assert.Zero(t, testing.AllocsPerRun(20, func() { Rows(c, 4096, 64) }))
}

// TestRowsConcurrentCallers: callers on several goroutines share the pool;
// a caller waiting for its helper runs other callers' queued calls, and
// every row of every call still runs exactly once.
func TestRowsConcurrentCallers(t *testing.T) {
	const callers, calls, rows = 6, 40, 300
	done := make(chan error, callers)
	for range callers {
		go func() {
			c := &countRows{hits: make([]atomic.Int32, rows)}
			for k := range calls {
				Rows(c, rows, 1000)
				for r := range c.hits {
					if got := c.hits[r].Load(); got != int32(k+1) {
						done <- assert.AnError
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range callers {
		require.NoError(t, <-done)
	}
}
