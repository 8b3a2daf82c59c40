package tensor_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/tensor"
)

func TestPackedRowsShareStorage(t *testing.T) {
	data := []float32{1, 2, 3, 4, 5, 6}
	off := []int{0, 2, 2, 3, 6}
	x, err := tensor.Packed(data, off)
	require.NoError(t, err)
	assert.True(t, x.IsPacked())
	assert.Equal(t, tensor.Shape{B: 4, T: 3}, x.Shape)
	assert.Equal(t, 6, x.Len())
	assert.Equal(t, []float32{1, 2}, x.Row(0))
	assert.Empty(t, x.Row(1))
	assert.Equal(t, []float32{4, 5, 6}, x.Row(3))
	start, n := x.Span(3)
	assert.Equal(t, [2]int{3, 3}, [2]int{start, n})
	assert.Equal(t, float32(5), x.At(3, 1))
	x.Set(2, 0, 30)
	assert.Equal(t, float32(30), data[2], "Set writes through to the caller's array")
	assert.Same(t, &data[3], &x.Row(3)[0], "no copy")
	assert.Panics(t, func() { x.At(0, 2) }, "column past a packed row's end")
	assert.Panics(t, func() { x.At(1, 0) }, "empty row")
	assert.Equal(t, [][]float64{{1, 2}, {}, {30}, {4, 5, 6}}, tensor.Rows[float64](x))
	require.NoError(t, x.CheckLayout("x"))
}

func TestPackedRejectsBadOffsets(t *testing.T) {
	data := make([]float64, 4)
	for _, c := range []struct {
		name string
		off  []int
		kind error
	}{
		{"empty", nil, tensor.ErrShape},
		{"not from 0", []int{1, 4}, tensor.ErrRange},
		{"decreasing", []int{0, 3, 2, 4}, tensor.ErrRange},
		{"short of the data", []int{0, 3}, tensor.ErrShape},
		{"past the data", []int{0, 5}, tensor.ErrShape},
	} {
		_, err := tensor.Packed(data, c.off)
		assert.ErrorIs(t, err, c.kind, c.name)
	}
	x, err := tensor.Packed[float32](nil, []int{0})
	require.NoError(t, err)
	assert.False(t, x.IsZero(), "a packed batch of no rows is present, not absent")
	assert.Equal(t, 0, x.B)
}

func TestCheckRejectsPackedCheckLikeComparesOffsets(t *testing.T) {
	x, err := tensor.Packed([]float64{1, 2, 3}, []int{0, 1, 3})
	require.NoError(t, err)
	err = x.Check("logp")
	require.ErrorIs(t, err, tensor.ErrShape)
	assert.Contains(t, err.Error(), "packed")
	assert.ErrorIs(t, tensor.CheckShape("logp", x, x.Shape), tensor.ErrShape)

	same, _ := tensor.Packed([]float64{0, 0, 0}, []int{0, 1, 3})
	require.NoError(t, tensor.CheckLike("mask", same, x), "equal offsets in another slice")
	other, _ := tensor.Packed([]float64{0, 0, 0}, []int{0, 2, 3})
	err = tensor.CheckLike("mask", other, x)
	require.ErrorIs(t, err, tensor.ErrShape)
	var ae *tensor.ArgError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, []int{1}, ae.Index)
	padded := tensor.MustNew[float64](2, 2)
	err = tensor.CheckLike("mask", padded, x)
	require.ErrorIs(t, err, tensor.ErrShape)
	assert.Contains(t, err.Error(), "one layout")
	assert.ErrorIs(t, tensor.CheckLike("mask", x, padded), tensor.ErrShape)

	broken := x
	broken.T = 1
	assert.ErrorIs(t, broken.CheckLayout("x"), tensor.ErrShape, "T must be the longest row")
}

func TestPackedErrorsNameRowAndColumn(t *testing.T) {
	x, err := tensor.Packed([]float64{1, 0, 1, 0.5}, []int{0, 0, 2, 2, 4})
	require.NoError(t, err)
	var ae *tensor.ArgError
	require.True(t, errors.As(tensor.CheckMask("mask", x), &ae))
	assert.Equal(t, []int{3, 1}, ae.Index, "flat 3 is row 3, column 1 (rows 0 and 2 are empty)")
	lengths := make([]int, 4)
	x.Data[3] = 1
	total, err := tensor.RowLengths(lengths, x)
	require.NoError(t, err)
	assert.Equal(t, 3, total)
	assert.Equal(t, []int{0, 1, 0, 2}, lengths)
	y, _ := tensor.Packed(make([]float32, 4), x.Offsets)
	require.NoError(t, tensor.Convert(y, x))
	assert.Equal(t, []float32{1, 0, 1, 1}, y.Data)
}
