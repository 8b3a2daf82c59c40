package tensor

import (
	"fmt"
	"math"
	"sort"
)

// Float is the set of storage types a batch may hold.
type Float interface{ ~float32 | ~float64 }

// Shape is the shape of a token batch: B sequences padded to T positions.
type Shape struct{ B, T int }

// Size returns B·T, the number of positions.
func (s Shape) Size() int { return s.B * s.T }

// Batch is a [B, T] matrix stored row-major: element (b, t) is Data[b*T+t].
// The zero Batch (nil Data, zero shape) stands for an absent optional input.
//
// A packed batch (see Packed) has Offsets: the cu_seqlens of a
// variable-length flash-attention batch, B+1 nondecreasing offsets into
// Data, with row b at Data[Offsets[b]:Offsets[b+1]] and no padding. Its T
// is the longest row. Functions that accept packed batches say so; every
// other one rejects them through Check with ErrShape.
type Batch[F Float] struct {
	Shape
	Data []F
	// Offsets are the cu_seqlens of a packed batch, nil for a padded one.
	Offsets []int
}

// Packed wraps data as a packed batch of len(cuSeqlens)−1 rows without
// copying either slice: row b is data[cuSeqlens[b]:cuSeqlens[b+1]].
// cuSeqlens must start at 0, never decrease and end at len(data).
func Packed[F Float](data []F, cuSeqlens []int) (Batch[F], error) {
	if len(cuSeqlens) == 0 {
		return Batch[F]{}, Errorf(ErrShape, "cu_seqlens", nil, "empty, want B+1 offsets starting at 0")
	}
	t, err := checkOffsets("cu_seqlens", "", cuSeqlens, len(data))
	if err != nil {
		return Batch[F]{}, err
	}
	if data == nil {
		data = []F{} // a present batch, even of no tokens, is not the zero Batch
	}
	return Batch[F]{Shape{len(cuSeqlens) - 1, t}, data, cuSeqlens}, nil
}

// checkOffsets validates cu_seqlens against a flat array of n tokens and
// returns the longest row. Errors name the argument name+suffix, joined
// only on error so that validation allocates nothing.
func checkOffsets(name, suffix string, off []int, n int) (int, error) {
	if off[0] != 0 {
		return 0, Errorf(ErrRange, name+suffix, At(0), "%d, want 0", off[0])
	}
	t := 0
	for b := 1; b < len(off); b++ {
		if off[b] < off[b-1] {
			return 0, Errorf(ErrRange, name+suffix, At(b), "%d is less than the previous offset %d", off[b], off[b-1])
		}
		t = max(t, off[b]-off[b-1])
	}
	if last := off[len(off)-1]; last != n {
		return 0, Errorf(ErrShape, name+suffix, At(len(off)-1), "%d, want the number of tokens %d", last, n)
	}
	return t, nil
}

// IsPacked reports whether x is a packed batch (it has Offsets).
func (x Batch[F]) IsPacked() bool { return x.Offsets != nil }

// Len returns the number of positions x holds: B·T for a padded batch, the
// total of the row lengths for a packed one.
func (x Batch[F]) Len() int {
	if x.Offsets != nil {
		return x.Offsets[x.B]
	}
	return x.B * x.T
}

// Span returns where row b starts in Data and how many positions it holds:
// (b·T, T) for a padded batch, (Offsets[b], Offsets[b+1]−Offsets[b]) for a
// packed one. Like slice indexing, it panics when b is not in [0, B).
func (x Batch[F]) Span(b int) (start, n int) {
	if uint(b) >= uint(x.B) {
		panic(fmt.Sprintf("tensor: row %d out of range for batch of %d rows", b, x.B))
	}
	if x.Offsets != nil {
		return x.Offsets[b], x.Offsets[b+1] - x.Offsets[b]
	}
	return b * x.T, x.T
}

// New returns a zeroed batch of shape [b, t].
func New[F Float](b, t int) (Batch[F], error) {
	if err := checkDims(b, t); err != nil {
		return Batch[F]{}, err
	}
	return Batch[F]{Shape: Shape{b, t}, Data: make([]F, b*t)}, nil
}

// FromSlice wraps data as a [b, t] batch without copying.
func FromSlice[F Float](data []F, b, t int) (Batch[F], error) {
	if err := checkDims(b, t); err != nil {
		return Batch[F]{}, err
	}
	if len(data) != b*t {
		return Batch[F]{}, Errorf(ErrShape, "data", nil, "length %d, want %d·%d = %d", len(data), b, t, b*t)
	}
	return Batch[F]{Shape: Shape{b, t}, Data: data}, nil
}

// FromRows copies equal-length rows into a new batch. Zero rows give an
// empty batch of shape [0, 0].
func FromRows[F, S Float](rows [][]S) (Batch[F], error) {
	if len(rows) == 0 {
		return Batch[F]{Data: []F{}}, nil
	}
	t := len(rows[0])
	x := Batch[F]{Shape: Shape{len(rows), t}, Data: make([]F, len(rows)*t)}
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
func (x Batch[F]) IsZero() bool {
	return x.Data == nil && x.B == 0 && x.T == 0 && x.Offsets == nil
}

// Row returns row b as a slice sharing x's storage: T positions, or the
// row's own length in a packed batch. Like slice indexing, it panics when b
// is not in [0, B).
func (x Batch[F]) Row(b int) []F {
	start, n := x.Span(b)
	return x.Data[start : start+n : start+n]
}

// At returns element (b, t). Like slice indexing, it panics when b is not in
// [0, B) or t not in [0, T): a column past the end must not read the next
// row.
func (x Batch[F]) At(b, t int) F {
	return x.Data[x.checkIndex(b, t)]
}

// Set sets element (b, t) to v, with At's bounds.
func (x Batch[F]) Set(b, t int, v F) {
	x.Data[x.checkIndex(b, t)] = v
}

// checkIndex returns the flat index of (b, t), or panics with an
// index-out-of-range message naming the axis. A programmer error, not a
// data error, hence a panic as for slices.
func (x Batch[F]) checkIndex(b, t int) int {
	if uint(b) < uint(x.B) {
		start, n := x.Span(b)
		if uint(t) < uint(n) {
			return start + t
		}
	}
	panic(fmt.Sprintf("tensor: index (%d, %d) out of range for batch of shape [%d, %d]", b, t, x.B, x.T))
}

// index returns the (row, column) of flat position i, for error messages.
func (x Batch[F]) index(i int) []int {
	if x.Offsets != nil {
		b := sort.Search(x.B, func(b int) bool { return x.Offsets[b+1] > i })
		return At(b, i-x.Offsets[min(b, x.B)])
	}
	return pos(x.T, i)
}

// Rows copies x into a slice of rows of type S, e.g. for JSON output.
func Rows[S, F Float](x Batch[F]) [][]S {
	rows := make([][]S, x.B)
	for b := range rows {
		row := make([]S, len(x.Row(b)))
		for t, v := range x.Row(b) {
			row[t] = S(v)
		}
		rows[b] = row
	}
	return rows
}

// Convert copies src into dst, converting the element type. Either both
// are padded of the same shape or both packed with equal offsets.
func Convert[D, S Float](dst Batch[D], src Batch[S]) error {
	if err := src.CheckLayout("src"); err != nil {
		return err
	}
	if err := CheckLike("dst", dst, src); err != nil {
		return err
	}
	for i, v := range src.Data {
		dst.Data[i] = D(v)
	}
	return nil
}
