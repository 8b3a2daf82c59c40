package tensor

import (
	"math"
	"unsafe"
)

// IsFinite reports whether v is neither NaN nor an infinity.
func IsFinite[F Float](v F) bool { return v-v == 0 }

// Check reports whether x is a well-formed padded batch: non-negative
// dimensions and len(Data) == B·T. name is used in the error. A packed
// batch is an ErrShape error here: a function that reads rows as
// Data[b*T:(b+1)*T] would misread it, so only functions that index rows
// through Row or Span accept packed batches, and they call CheckLayout.
func (x Batch[F]) Check(name string) error {
	if x.Offsets != nil {
		return Errorf(ErrShape, name, nil, "packed batch (cu_seqlens) of %d rows, but this function takes only padded [B, T] batches", x.B)
	}
	return x.checkPadded(name)
}

// CheckLayout reports whether x is a well-formed batch of either layout:
// padded as Check requires, or packed with B+1 offsets that start at 0,
// never decrease, end at len(Data), and whose longest row is T.
func (x Batch[F]) CheckLayout(name string) error {
	if x.Offsets == nil {
		return x.checkPadded(name)
	}
	if x.B < 0 || len(x.Offsets) != x.B+1 {
		return Errorf(ErrShape, name, nil, "packed batch of B = %d rows has %d offsets, want B+1", x.B, len(x.Offsets))
	}
	t, err := checkOffsets(name, ".cu_seqlens", x.Offsets, len(x.Data))
	if err != nil {
		return err
	}
	if t != x.T {
		return Errorf(ErrShape, name, nil, "packed batch has T = %d, want its longest row %d", x.T, t)
	}
	return nil
}

// CheckLike reports whether x is well formed (CheckLayout) and has the
// layout of ref: the same [B, T] when ref is padded, the same cu_seqlens
// offsets when ref is packed. All batches of one call share one layout.
func CheckLike[F, G Float](name string, x Batch[F], ref Batch[G]) error {
	if ref.Offsets == nil {
		if x.Offsets != nil {
			return Errorf(ErrShape, name, nil, "packed (cu_seqlens) with %d rows, but the other batches of this call are padded [%d, %d]; all must share one layout", x.B, ref.B, ref.T)
		}
		return CheckShape(name, x, ref.Shape)
	}
	if x.Offsets == nil {
		return Errorf(ErrShape, name, nil, "padded [%d, %d], but the other batches of this call are packed (cu_seqlens); all must share one layout", x.B, x.T)
	}
	if err := x.CheckLayout(name); err != nil {
		return err
	}
	if x.B != ref.B {
		return Errorf(ErrShape, name, nil, "packed batch of %d rows, want %d like the other batches of this call", x.B, ref.B)
	}
	if &x.Offsets[0] != &ref.Offsets[0] { // shared cu_seqlens need no comparison
		for b, o := range x.Offsets {
			if o != ref.Offsets[b] {
				return Errorf(ErrShape, name+".cu_seqlens", At(b), "%d, want %d like the other batches of this call; all must share one layout", o, ref.Offsets[b])
			}
		}
	}
	return nil
}

func (x Batch[F]) checkPadded(name string) error {
	if x.B < 0 || x.T < 0 {
		return Errorf(ErrRange, name, nil, "shape [%d, %d] has a negative dimension", x.B, x.T)
	}
	if x.T != 0 && x.B > math.MaxInt/x.T {
		return Errorf(ErrRange, name, nil, "shape [%d, %d] overflows int", x.B, x.T)
	}
	if len(x.Data) != x.B*x.T {
		return Errorf(ErrShape, name, nil, "len(Data) = %d, want B·T = %d·%d = %d", len(x.Data), x.B, x.T, x.B*x.T)
	}
	return nil
}

// CheckShape reports whether x is a well-formed padded batch (Check) of
// shape want.
func CheckShape[F Float](name string, x Batch[F], want Shape) error {
	if err := x.Check(name); err != nil {
		return err
	}
	if x.Shape != want {
		return Errorf(ErrShape, name, nil, "shape [%d, %d], want [%d, %d]", x.B, x.T, want.B, want.T)
	}
	return nil
}

// CheckFinite reports the first NaN or infinity in x, by row and column.
func CheckFinite[F Float](name string, x Batch[F]) error {
	for i, v := range x.Data {
		if !IsFinite(v) {
			return Errorf(ErrNonFinite, name, x.index(i), "%v", float64(v))
		}
	}
	return nil
}

// CheckFiniteVec reports the first NaN or infinity in v, by index.
func CheckFiniteVec[F Float](name string, v []F) error {
	for i, x := range v {
		if !IsFinite(x) {
			return Errorf(ErrNonFinite, name, At(i), "%v", float64(x))
		}
	}
	return nil
}

// CheckNonNegative reports the first entry of x that is negative or not
// finite; weights must be finite and ≥ 0.
func CheckNonNegative[F Float](name string, x Batch[F]) error {
	for i, v := range x.Data {
		if !IsFinite(v) {
			return Errorf(ErrNonFinite, name, x.index(i), "%v", float64(v))
		}
		if v < 0 {
			return Errorf(ErrRange, name, x.index(i), "%v is negative", float64(v))
		}
	}
	return nil
}

// CheckMask reports the first entry of m that is not exactly 0 or 1.
func CheckMask[F Float](name string, m Batch[F]) error {
	for i, v := range m.Data {
		if v != 0 && v != 1 {
			return Errorf(ErrMask, name, m.index(i), "%v", float64(v))
		}
	}
	return nil
}

// RowLengths validates mask, padded or packed, and writes the number of
// valid tokens of each row into dst, which must have length mask.B. It
// returns the total.
func RowLengths[F Float](dst []int, mask Batch[F]) (int, error) {
	if err := mask.CheckLayout("mask"); err != nil {
		return 0, err
	}
	if len(dst) != mask.B {
		return 0, Errorf(ErrShape, "dst", nil, "length %d, want B = %d", len(dst), mask.B)
	}
	total := 0
	for b := range dst {
		n := 0
		for t, v := range mask.Row(b) {
			switch v {
			case 1:
				n++
			case 0:
			default:
				return 0, Errorf(ErrMask, "mask", At(b, t), "%v", float64(v))
			}
		}
		dst[b] = n
		total += n
	}
	return total, nil
}

// PrefixMask fills dst with a prefix mask: row b has lengths[b] ones followed
// by zeros.
func PrefixMask[F Float](dst Batch[F], lengths []int) error {
	if err := dst.Check("dst"); err != nil {
		return err
	}
	if len(lengths) != dst.B {
		return Errorf(ErrShape, "lengths", nil, "length %d, want B = %d", len(lengths), dst.B)
	}
	for b, n := range lengths {
		if n < 0 || n > dst.T {
			return Errorf(ErrRange, "lengths", At(b), "%d not in [0, T=%d]", n, dst.T)
		}
		row := dst.Row(b)
		for t := range row {
			row[t] = 0
			if t < n {
				row[t] = 1
			}
		}
	}
	return nil
}

func pos(t, i int) []int {
	if t == 0 {
		return At(i)
	}
	return At(i/t, i%t)
}

// Overlaps reports whether a and b share at least one element of memory.
// Empty slices overlap nothing.
func Overlaps[F Float](a, b []F) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	size := uintptr(unsafe.Sizeof(a[0]))
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b))*size && b0 < a0+uintptr(len(a))*size
}

// Same reports whether a and b are the same memory: same first element and
// same length. An output that may be computed in place accepts Same and
// rejects any other overlap.
func Same[F Float](a, b []F) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// CheckDisjoint reports an ErrOverlap *ArgError naming out when out shares
// memory with other, named otherName.
func CheckDisjoint[F Float](name string, out []F, otherName string, other []F) error {
	if Overlaps(out, other) {
		return Errorf(ErrOverlap, name, nil, "shares memory with %s", otherName)
	}
	return nil
}
