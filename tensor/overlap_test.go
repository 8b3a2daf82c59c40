package tensor_test

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
)

// TestOverlaps: slices overlap when they share one element; adjacent
// slices of one array, empty slices and separate arrays do not.
func TestOverlaps(t *testing.T) {
	a := make([]float32, 10)
	b := make([]float32, 10)
	for _, c := range []struct {
		name string
		x, y []float32
		want bool
	}{
		{"same", a, a, true},
		{"inside", a, a[3:5], true},
		{"last element", a[:5], a[4:], true},
		{"adjacent", a[:5], a[5:], false},
		{"empty", a[:0], a, false},
		{"nil", nil, a, false},
		{"separate arrays", a, b, false},
	} {
		assert.Equal(t, c.want, tensor.Overlaps(c.x, c.y), c.name)
		assert.Equal(t, c.want, tensor.Overlaps(c.y, c.x), c.name+" (swapped)")
	}
	assert.True(t, tensor.Same(a, a))
	assert.False(t, tensor.Same(a[:5], a), "same start, other length")
	assert.False(t, tensor.Same(a[1:], a[:9]))
	assert.True(t, tensor.Same[float32](nil, a[:0]), "empty slices are the same nothing")

	err := tensor.CheckDisjoint("dst", a[2:6], "mask", a[5:])
	assert.True(t, errors.Is(err, tensor.ErrOverlap), "%v", err)
	var ae *tensor.ArgError
	assert.True(t, errors.As(err, &ae))
	assert.Equal(t, "dst", ae.Arg)
	assert.EqualError(t, err, "dst: overlaps another argument: shares memory with mask")
	assert.NoError(t, tensor.CheckDisjoint("dst", a[:5], "mask", a[5:]))
}
