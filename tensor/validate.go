package tensor

import (
	"math"
	"unsafe"
)

// IsFinite reports whether v is neither NaN nor an infinity.
func IsFinite[F Float](v F) bool { return v-v == 0 }

// Check reports whether x is a well-formed batch: non-negative dimensions
// and len(Data) == B·T. name is used in the error.
func (x Batch[F]) Check(name string) error {
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

// CheckShape reports whether x is well formed and has shape want.
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
			return nonFinite(name, x.T, i, float64(v))
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
			return nonFinite(name, x.T, i, float64(v))
		}
		if v < 0 {
			return Errorf(ErrRange, name, pos(x.T, i), "%v is negative", float64(v))
		}
	}
	return nil
}

// CheckMask reports the first entry of m that is not exactly 0 or 1.
func CheckMask[F Float](name string, m Batch[F]) error {
	for i, v := range m.Data {
		if v != 0 && v != 1 {
			return maskError(name, m.T, i, float64(v))
		}
	}
	return nil
}

// RowLengths validates mask and writes the number of valid tokens of each row
// into dst, which must have length mask.B. It returns the total.
func RowLengths[F Float](dst []int, mask Batch[F]) (int, error) {
	if err := mask.Check("mask"); err != nil {
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
				return 0, maskError("mask", mask.T, b*mask.T+t, float64(v))
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

func nonFinite(name string, t, i int, v float64) error {
	return Errorf(ErrNonFinite, name, pos(t, i), "%v", v)
}

func maskError(name string, t, i int, v float64) error {
	return Errorf(ErrMask, name, pos(t, i), "%v", v)
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
