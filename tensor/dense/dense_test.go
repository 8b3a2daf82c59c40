package dense_test

import (
	"testing"

	gtensor "gorgonia.org/tensor"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/tensor/dense"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seq(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i)
	}
	return s
}

// TestRoundTripSharesStorage: Batch → Dense → Batch without a copy.
func TestRoundTripSharesStorage(t *testing.T) {
	x, _ := tensor.FromSlice(seq(12), 3, 4)
	d, err := dense.FromBatch(x)
	require.NoError(t, err)
	if got := d.Shape(); got[0] != 3 || got[1] != 4 {
		t.Fatalf("shape %v", got)
	}
	if v, _ := d.At(2, 1); v.(float32) != 9 {
		t.Fatalf("d.At(2,1) = %v, want 9", v)
	}
	y, err := dense.ToBatch[float32](d)
	require.NoError(t, err)
	y.Set(1, 2, 100)
	require.Equal(t, float32(100), x.At(1, 2), "ToBatch copied: a write through it is not seen by the original")
	require.Equal(t, x.Shape, y.Shape, "shape")
}

// TestViewsAreRejectedOrMaterialised covers the layouts whose backing array
// is not the elements they describe.
func TestViewsAreRejectedOrMaterialised(t *testing.T) {
	full := gtensor.New(gtensor.WithShape(4, 6), gtensor.WithBacking(seq(24)))
	rowView, err := full.Slice(gtensor.S(1, 3))
	require.NoError(t, err)
	colView, err := full.Slice(nil, gtensor.S(2, 5))
	require.NoError(t, err)
	stepView, err := full.Slice(gtensor.S(0, 4, 2), nil)
	require.NoError(t, err)
	transposed := gtensor.New(gtensor.WithShape(4, 6), gtensor.WithBacking(seq(24)))
	require.NoError(t, transposed.T())
	colMajor := gtensor.New(gtensor.WithShape(2, 3), gtensor.WithBacking(seq(6)), gtensor.AsFortran(nil))

	cases := []struct {
		name string
		d    gtensor.Tensor
		want func(i, j int) float32 // element (i, j) of what the tensor describes
		b, t int
	}{
		{"row slice", rowView, func(i, j int) float32 { return float32((i+1)*6 + j) }, 2, 6},
		{"column slice (strided)", colView, func(i, j int) float32 { return float32(i*6 + j + 2) }, 4, 3},
		{"every other row", stepView, func(i, j int) float32 { return float32(2*i*6 + j) }, 2, 6},
		{"transpose", transposed, func(i, j int) float32 { return float32(j*6 + i) }, 6, 4},
		{"column-major", colMajor, nil, 2, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.d.(*gtensor.Dense)
			_, err := dense.ToBatch[float32](d)
			require.Error(t, err, "ToBatch accepted a tensor whose backing is not its elements")
			require.ErrorIs(t, err, tensor.ErrShape)
			got, err := dense.CopyToBatch[float32](d)
			require.NoError(t, err)
			require.Equal(t, c.b, got.B, "shape")
			require.Equal(t, c.t, got.T, "shape")
			for i := range c.b {
				for j := range c.t {
					v, err := d.At(i, j)
					require.NoError(t, err)
					want := v.(float32)
					if c.want != nil && want != c.want(i, j) {
						t.Fatalf("gorgonia's At(%d,%d) = %v, test expects %v", i, j, want, c.want(i, j))
					}
					require.Equal(t, want, got.At(i, j), "CopyToBatch(%d,%d)", i, j)
				}
			}
		})
	}
}

func TestToBatchRejectsWrongTypeAndRank(t *testing.T) {
	f64 := gtensor.New(gtensor.WithShape(2, 2), gtensor.WithBacking([]float64{1, 2, 3, 4}))
	_, err := dense.ToBatch[float32](f64)
	assert.Error(t, err, "float64 tensor read as float32")
	b, err := dense.ToBatch[float64](f64)
	require.NoError(t, err, "float64 tensor: %v", b)
	assert.Equal(t, float64(3), b.At(1, 0), "float64 tensor: %v", b)
	cube := gtensor.New(gtensor.WithShape(2, 2, 2), gtensor.WithBacking(seq(8)))
	_, err = dense.ToBatch[float32](cube)
	assert.Error(t, err, "3-D tensor accepted")
	vec := gtensor.New(gtensor.WithShape(5), gtensor.WithBacking(seq(5)))
	b32, err := dense.ToBatch[float32](vec)
	require.NoError(t, err, "1-D tensor: %v", b32)
	assert.Equal(t, 1, b32.B, "1-D tensor: %v", b32)
	assert.Equal(t, 5, b32.T, "1-D tensor: %v", b32)
	assert.Equal(t, float32(4), b32.At(0, 4), "1-D tensor: %v", b32)
	_, err = dense.ToBatch[float32](nil)
	assert.Error(t, err, "nil tensor accepted")
	_, err = dense.FromBatch(tensor.Batch[float32]{Shape: tensor.Shape{B: 2, T: 2}, Data: seq(3)})
	assert.Error(t, err, "malformed batch accepted")
	_, err = dense.FromBatch(tensor.MustNew[float32](0, 3))
	assert.Error(t, err, "empty batch accepted")
}
