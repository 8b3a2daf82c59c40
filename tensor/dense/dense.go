// Package dense converts between rlpost token batches and gorgonia.org/tensor
// *gtensor.Dense values without copying.
//
// It lives apart from package tensor so that importers of the core packages
// do not pull in gorgonia's dependency tree. Beside rlpost's package tensor,
// import gorgonia's as gtensor "gorgonia.org/tensor", as this package and
// its examples do.
//
// A *gtensor.Dense can describe memory that is not the contiguous row-major
// [B, T] layout a Batch needs: a slice of another tensor (a view), a
// transposed tensor whose data has not been moved yet, or column-major data.
// Data() on such a tensor returns the raw backing array, not the elements
// the tensor describes, so reading it as a batch would silently misread.
// ToBatch therefore refuses every such tensor with an error, and CopyToBatch
// materialises it into fresh contiguous storage first.
package dense

import (
	"fmt"
	"unsafe"

	gtensor "gorgonia.org/tensor"

	"github.com/rlpost/rlpost/tensor"
)

// FromBatch returns a (B, T) *gtensor.Dense that shares x's storage: writes
// through either are seen by both.
func FromBatch[F tensor.Float](x tensor.Batch[F]) (*gtensor.Dense, error) {
	if err := x.Check("x"); err != nil {
		return nil, fmt.Errorf("dense: %w", err)
	}
	if x.B == 0 || x.T == 0 {
		return nil, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrEmpty, "x", nil, "shape [%d, %d]: gorgonia has no empty dense tensors", x.B, x.T))
	}
	return gtensor.New(gtensor.WithShape(x.B, x.T), gtensor.WithBacking(x.Data)), nil
}

// ToBatch returns a batch sharing d's storage. d must hold F (Float32 for
// float32, Float64 for float64), have two dimensions (B, T) — or one, read
// as a single row — and be laid out contiguously in row-major order: views,
// un-materialised transposes and column-major tensors are rejected, since
// their backing array is not the batch they describe. Use CopyToBatch for
// those.
func ToBatch[F tensor.Float](d *gtensor.Dense) (tensor.Batch[F], error) {
	b, t, err := shapeOf[F](d)
	if err != nil {
		return tensor.Batch[F]{}, err
	}
	if d.IsMaterializable() {
		return tensor.Batch[F]{}, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil,
			"a view or un-materialised transpose of another tensor (its backing is not its elements); use CopyToBatch"))
	}
	if !d.DataOrder().IsRowMajor() || !d.DataOrder().IsContiguous() {
		return tensor.Batch[F]{}, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil,
			"data order %v is not contiguous row-major; use CopyToBatch", d.DataOrder()))
	}
	if st := d.Strides(); len(st) == 2 && (st[0] != t || st[1] != 1) || len(st) == 1 && st[0] != 1 {
		return tensor.Batch[F]{}, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil,
			"strides %v are not those of a contiguous (%d, %d) tensor; use CopyToBatch", st, b, t))
	}
	if !d.IsNativelyAccessible() {
		return tensor.Batch[F]{}, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil, "memory not accessible from Go (device memory?)"))
	}
	data, err := backing[F](d)
	if err != nil {
		return tensor.Batch[F]{}, err
	}
	if len(data) < b*t {
		return tensor.Batch[F]{}, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil,
			"backing holds %d elements, shape needs %d", len(data), b*t))
	}
	return tensor.Batch[F]{Shape: tensor.Shape{B: b, T: t}, Data: data[: b*t : b*t]}, nil
}

// CopyToBatch returns a new batch holding the elements d describes, whatever
// its layout: views and transposes are materialised first.
func CopyToBatch[F tensor.Float](d *gtensor.Dense) (tensor.Batch[F], error) {
	if _, _, err := shapeOf[F](d); err != nil {
		return tensor.Batch[F]{}, err
	}
	src := d
	if d.IsMaterializable() || !d.DataOrder().IsRowMajor() || !d.DataOrder().IsContiguous() {
		m, ok := d.Materialize().(*gtensor.Dense)
		if !ok {
			return tensor.Batch[F]{}, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil, "materialising did not give a *gtensor.Dense"))
		}
		src = m
		if !src.DataOrder().IsRowMajor() {
			// A column-major tensor materialises column-major; read it
			// element by element instead.
			return copyByIndex[F](d)
		}
	}
	view, err := ToBatch[F](src)
	if err != nil {
		return copyByIndex[F](d)
	}
	out := tensor.Batch[F]{Shape: view.Shape, Data: append([]F(nil), view.Data...)}
	return out, nil
}

// copyByIndex reads d element by element through its own indexing, which is
// right for any layout.
func copyByIndex[F tensor.Float](d *gtensor.Dense) (tensor.Batch[F], error) {
	b, t, err := shapeOf[F](d)
	if err != nil {
		return tensor.Batch[F]{}, err
	}
	out := tensor.MustNew[F](b, t)
	for i := range b {
		for j := range t {
			var v any
			if d.Dims() == 1 {
				v, err = d.At(j)
			} else {
				v, err = d.At(i, j)
			}
			if err != nil {
				return tensor.Batch[F]{}, fmt.Errorf("dense: reading (%d, %d): %v", i, j, err)
			}
			switch x := v.(type) {
			case float32:
				out.Data[i*t+j] = F(x)
			case float64:
				out.Data[i*t+j] = F(x)
			}
		}
	}
	return out, nil
}

// shapeOf checks d's dtype and rank and returns its (B, T).
func shapeOf[F tensor.Float](d *gtensor.Dense) (b, t int, err error) {
	if d == nil {
		return 0, 0, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrEmpty, "d", nil, "nil tensor"))
	}
	var z F
	want := gtensor.Float64
	if unsafe.Sizeof(z) == 4 {
		want = gtensor.Float32
	}
	if d.Dtype() != want {
		return 0, 0, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil, "dtype %v, want %v", d.Dtype(), want))
	}
	switch s := d.Shape(); len(s) {
	case 1:
		return 1, s[0], nil
	case 2:
		return s[0], s[1], nil
	default:
		return 0, 0, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil, "shape %v, want (B, T) or (T)", s))
	}
}

// backing returns d's backing array as []F.
func backing[F tensor.Float](d *gtensor.Dense) ([]F, error) {
	switch v := d.Data().(type) {
	case []F:
		return v, nil
	case []float32:
		// F is a named type with float32 underneath.
		return unsafe.Slice((*F)(unsafe.Pointer(unsafe.SliceData(v))), len(v)), nil
	case []float64:
		return unsafe.Slice((*F)(unsafe.Pointer(unsafe.SliceData(v))), len(v)), nil
	}
	return nil, fmt.Errorf("dense: %w", tensor.Errorf(tensor.ErrShape, "d", nil, "backing of type %T", d.Data()))
}
