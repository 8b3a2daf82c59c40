package tensor_test

import (
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
)

// TestBatchIndexBounds: a column past the end of a row panics like slice
// indexing instead of reading the next row's element.
func TestBatchIndexBounds(t *testing.T) {
	x := tensor.MustNew[float32](2, 3)
	x.Set(1, 2, 7)
	assert.Equal(t, float32(7), x.At(1, 2))
	for _, bt := range [][2]int{{0, 3}, {0, -1}, {2, 0}, {-1, 0}} {
		assert.Panics(t, func() { x.At(bt[0], bt[1]) }, "At(%d, %d)", bt[0], bt[1])
		assert.Panics(t, func() { x.Set(bt[0], bt[1], 1) }, "Set(%d, %d)", bt[0], bt[1])
	}
	assert.Panics(t, func() { x.Row(2) })
	assert.Len(t, x.Row(1), 3)
}
