package tensor

import (
	"fmt"
	"math"
)

// Float is the set of storage types a batch may hold.
type Float interface{ ~float32 | ~float64 }

// Shape is the shape of a token batch: B sequences padded to T positions.
type Shape struct{ B, T int }

// Size returns B·T, the number of positions.
func (s Shape) Size() int { return s.B * s.T }

// Batch is a [B, T] matrix stored row-major: element (b, t) is Data[b*T+t].
// The zero Batch (nil Data, zero shape) stands for an absent optional input.
type Batch[F Float] struct {
	Shape
	Data []F
}

// New returns a zeroed batch of shape [b, t].
func New[F Float](b, t int) (Batch[F], error) {
	if err := checkDims(b, t); err != nil {
		return Batch[F]{}, err
	}
	return Batch[F]{Shape{b, t}, make([]F, b*t)}, nil
}

// FromSlice wraps data as a [b, t] batch without copying.
func FromSlice[F Float](data []F, b, t int) (Batch[F], error) {
	if err := checkDims(b, t); err != nil {
		return Batch[F]{}, err
	}
	if len(data) != b*t {
		return Batch[F]{}, Errorf(ErrShape, "data", nil, "length %d, want %d·%d = %d", len(data), b, t, b*t)
	}
	return Batch[F]{Shape{b, t}, data}, nil
}

// FromRows copies equal-length rows into a new batch. Zero rows give an
// empty batch of shape [0, 0].
func FromRows[F, S Float](rows [][]S) (Batch[F], error) {
	if len(rows) == 0 {
		return Batch[F]{Data: []F{}}, nil
	}
	t := len(rows[0])
	x := Batch[F]{Shape{len(rows), t}, make([]F, len(rows)*t)}
	for b, row := range rows {
		if len(row) != t {
			return Batch[F]{}, Errorf(ErrShape, "rows", At(b), "length %d, want %d like row 0", len(row), t)
		}
		for i, v := range row {
			x.Data[b*t+i] = F(v)
		}
	}
	return x, nil
}

// MustNew is New for shapes known to be valid; it panics on negative
// dimensions, like make does.
func MustNew[F Float](b, t int) Batch[F] {
	x, err := New[F](b, t)
	if err != nil {
		panic(err)
	}
	return x
}

func checkDims(b, t int) error {
	if b < 0 || t < 0 {
		return Errorf(ErrRange, "shape", nil, "[%d, %d] has a negative dimension", b, t)
	}
	if t != 0 && b > math.MaxInt/t {
		return Errorf(ErrRange, "shape", nil, "[%d, %d] overflows int", b, t)
	}
	return nil
}

// IsZero reports whether x is the zero Batch, the marker of an absent
// optional input.
func (x Batch[F]) IsZero() bool { return x.Data == nil && x.B == 0 && x.T == 0 }

// Row returns row b as a slice sharing x's storage. Like slice indexing,
// it panics when b is not in [0, B).
func (x Batch[F]) Row(b int) []F {
	x.checkIndex(b, 0)
	return x.Data[b*x.T : (b+1)*x.T : (b+1)*x.T]
}

// At returns element (b, t). Like slice indexing, it panics when b is not in
// [0, B) or t not in [0, T): a column past the end must not read the next
// row.
func (x Batch[F]) At(b, t int) F {
	x.checkIndex(b, t)
	return x.Data[b*x.T+t]
}

// Set sets element (b, t) to v, with At's bounds.
func (x Batch[F]) Set(b, t int, v F) {
	x.checkIndex(b, t)
	x.Data[b*x.T+t] = v
}

// checkIndex panics with an index-out-of-range message naming the axis.
// A programmer error, not a data error, hence a panic as for slices.
func (x Batch[F]) checkIndex(b, t int) {
	if uint(b) >= uint(x.B) || (uint(t) >= uint(x.T) && !(t == 0 && x.T == 0)) {
		panic(fmt.Sprintf("tensor: index (%d, %d) out of range for batch of shape [%d, %d]", b, t, x.B, x.T))
	}
}

// Rows copies x into a slice of rows of type S, e.g. for JSON output.
func Rows[S, F Float](x Batch[F]) [][]S {
	rows := make([][]S, x.B)
	for b := range rows {
		row := make([]S, x.T)
		for t, v := range x.Row(b) {
			row[t] = S(v)
		}
		rows[b] = row
	}
	return rows
}

// Convert copies src into dst, converting the element type.
func Convert[D, S Float](dst Batch[D], src Batch[S]) error {
	if err := src.Check("src"); err != nil {
		return err
	}
	if err := CheckShape("dst", dst, src.Shape); err != nil {
		return err
	}
	for i, v := range src.Data {
		dst.Data[i] = D(v)
	}
	return nil
}
