package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConstructors(t *testing.T) {
	x, err := tensor.New[float32](2, 3)
	require.NoError(t, err, "New: %+v", x)
	require.Equal(t, 2, x.B, "New: %+v", x)
	require.Equal(t, 3, x.T, "New: %+v", x)
	require.Len(t, x.Data, 6, "New: %+v", x)
	_, err = tensor.New[float32](-1, 3)
	assert.ErrorIs(t, err, tensor.ErrRange, "New(-1, 3)")
	_, err = tensor.New[float64](math.MaxInt/2, 3)
	assert.ErrorIs(t, err, tensor.ErrRange, "New overflowing")
	_, err = tensor.FromSlice(make([]float32, 5), 2, 3)
	assert.ErrorIs(t, err, tensor.ErrShape, "FromSlice short")
	y, err := tensor.FromRows[float32]([][]float64{{1, 2}, {3, 4}, {5, 6}})
	require.NoError(t, err, "FromRows: %+v", y)
	require.Equal(t, float32(6), y.At(2, 1), "FromRows: %+v", y)
	require.Equal(t, 3, y.B, "FromRows: %+v", y)
	require.Equal(t, 2, y.T, "FromRows: %+v", y)
	_, err = tensor.FromRows[float32]([][]float64{{1, 2}, {3}})
	require.ErrorIs(t, err, tensor.ErrShape, "FromRows ragged")
	assert.Contains(t, err.Error(), "rows[1]", "FromRows ragged")
	empty, err := tensor.FromRows[float64]([][]float64{})
	require.NoError(t, err, "FromRows empty: %+v (an empty batch is not an absent one)", empty)
	assert.Equal(t, 0, empty.B, "FromRows empty: %+v (an empty batch is not an absent one)", empty)
	assert.False(t, empty.IsZero(), "FromRows empty: %+v (an empty batch is not an absent one)", empty)
	rows := tensor.Rows[float64](y)
	assert.Equal(t, "[[1 2] [3 4] [5 6]]", fmt.Sprint(rows), "Rows = %v", rows)
	z := tensor.MustNew[float64](3, 2)
	err = tensor.Convert(z, y)
	require.NoError(t, err, "Convert: %v", z)
	assert.Equal(t, float64(3), z.At(1, 0), "Convert: %v", z)
	assert.ErrorIs(t, tensor.Convert(tensor.MustNew[float64](2, 2), y), tensor.ErrShape, "Convert to wrong shape")
	if !(tensor.Batch[float32]{}).IsZero() {
		t.Error("zero Batch is not IsZero")
	}
}

func TestRowSharesStorage(t *testing.T) {
	x := tensor.MustNew[float32](2, 3)
	r := x.Row(1)
	r[2] = 7
	assert.Equal(t, float32(7), x.At(1, 2), "Row copied")
	assert.Equal(t, 3, cap(r), "cap(Row): appending would overwrite the next row")
}

func TestValidationNamesArgumentAndPosition(t *testing.T) {
	x, _ := tensor.FromSlice([]float64{0, 1, 2, math.NaN(), 4, 5}, 2, 3)
	err := tensor.CheckFinite("logp", x)
	require.ErrorIs(t, err, tensor.ErrNonFinite, "CheckFinite")
	assert.Equal(t, "logp[1,0]: not finite: NaN", err.Error(), "CheckFinite")
	var ae *tensor.ArgError
	require.ErrorAs(t, err, &ae, "ArgError: %+v", ae)
	assert.Equal(t, "logp", ae.Arg, "ArgError: %+v", ae)
	assert.Equal(t, "[1 0]", fmt.Sprint(ae.Index), "ArgError: %+v", ae)
	m, _ := tensor.FromSlice([]float32{1, 1, 0, 0.5}, 2, 2)
	err = tensor.CheckMask("mask", m)
	require.ErrorIs(t, err, tensor.ErrMask, "CheckMask")
	assert.Contains(t, err.Error(), "mask[1,1]", "CheckMask")
	w, _ := tensor.FromSlice([]float32{1, -2}, 1, 2)
	err = tensor.CheckNonNegative("w", w)
	require.ErrorIs(t, err, tensor.ErrRange, "CheckNonNegative")
	assert.Contains(t, err.Error(), "w[0,1]", "CheckNonNegative")
	err = tensor.CheckFiniteVec("r", []float32{1, float32(math.Inf(1))})
	require.ErrorIs(t, err, tensor.ErrNonFinite, "CheckFiniteVec")
	assert.Contains(t, err.Error(), "r[1]", "CheckFiniteVec")
	bad := tensor.Batch[float32]{Shape: tensor.Shape{B: 2, T: 2}, Data: make([]float32, 3)}
	err = bad.Check("adv")
	require.ErrorIs(t, err, tensor.ErrShape, "Check")
	assert.Contains(t, err.Error(), "adv", "Check")
	assert.ErrorIs(t, tensor.CheckShape("adv", tensor.MustNew[float32](2, 3), tensor.Shape{B: 2, T: 4}), tensor.ErrShape, "CheckShape")
}

func TestRowLengthsAndPrefixMask(t *testing.T) {
	m := tensor.MustNew[float32](3, 5)
	require.NoError(t, tensor.PrefixMask(m, []int{5, 0, 2}))
	require.Equal(t, "[1 1 1 1 1 0 0 0 0 0 1 1 0 0 0]", fmt.Sprint(m.Data), "PrefixMask: %v", m.Data)
	m.Set(1, 3, 1) // not a prefix any more
	lengths := make([]int, 3)
	total, err := tensor.RowLengths(lengths, m)
	require.NoError(t, err, "RowLengths = %v", lengths)
	assert.Equal(t, 8, total, "RowLengths = %v", lengths)
	assert.Equal(t, "[5 1 2]", fmt.Sprint(lengths), "RowLengths = %v", lengths)
	m.Set(2, 4, 3)
	_, err = tensor.RowLengths(lengths, m)
	require.ErrorIs(t, err, tensor.ErrMask, "RowLengths bad mask")
	assert.Contains(t, err.Error(), "mask[2,4]", "RowLengths bad mask")
	_, err = tensor.RowLengths(make([]int, 2), m)
	assert.ErrorIs(t, err, tensor.ErrShape, "RowLengths short dst")
	err = tensor.PrefixMask(m, []int{1, 6, 0})
	require.ErrorIs(t, err, tensor.ErrRange, "PrefixMask too long")
	assert.Contains(t, err.Error(), "lengths[1]", "PrefixMask too long")
}

// FuzzFromRows: arbitrary row shapes and values never panic, and an
// accepted batch is well formed.
func FuzzFromRows(f *testing.F) {
	f.Add([]byte{2, 3, 1, 2, 3, 4, 5, 6}, 3)
	f.Fuzz(func(t *testing.T, data []byte, width int) {
		var rows [][]float64
		for len(data) > 0 {
			n := int(data[0] % 8)
			data = data[1:]
			row := make([]float64, 0, n)
			for i := 0; i < n && len(data) > 0; i++ {
				row = append(row, float64(int8(data[0])))
				data = data[1:]
			}
			rows = append(rows, row)
		}
		x, err := tensor.FromRows[float32](rows)
		if err != nil {
			return
		}
		if err := x.Check("x"); err != nil {
			t.Fatalf("FromRows built a malformed batch: %v", err)
		}
		lengths := make([]int, x.B)
		if _, err := tensor.RowLengths(lengths, x); err == nil {
			if err := tensor.CheckMask("x", x); err != nil {
				t.Fatalf("RowLengths accepted what CheckMask rejects: %v", err)
			}
		}
	})
}

// A two-turn trajectory: the policy generated positions 1–2 and 5, the
// environment's observation sits between them, and padding ends the row.
func Example() {
	mask, _ := tensor.FromRows[float32]([][]float64{{0, 1, 1, 0, 0, 1, 0}})
	lengths := make([]int, mask.B)
	total, _ := tensor.RowLengths(lengths, mask)
	fmt.Println("valid tokens per row:", lengths, "total:", total)

	logp, _ := tensor.FromRows[float32]([][]float64{{-1, -2, math.NaN(), -1, -1, -1, -1}})
	err := tensor.CheckFinite("logp", logp)
	fmt.Println(err)
	// Output:
	// valid tokens per row: [3] total: 3
	// logp[0,2]: not finite: NaN
}
