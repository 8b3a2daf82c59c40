package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

func TestConstructors(t *testing.T) {
	x, err := tensor.New[float32](2, 3)
	if err != nil || x.B != 2 || x.T != 3 || len(x.Data) != 6 {
		t.Fatalf("New: %+v %v", x, err)
	}
	if _, err := tensor.New[float32](-1, 3); !errors.Is(err, tensor.ErrRange) {
		t.Errorf("New(-1, 3): %v", err)
	}
	if _, err := tensor.New[float64](math.MaxInt/2, 3); !errors.Is(err, tensor.ErrRange) {
		t.Errorf("New overflowing: %v", err)
	}
	if _, err := tensor.FromSlice(make([]float32, 5), 2, 3); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("FromSlice short: %v", err)
	}
	y, err := tensor.FromRows[float32]([][]float64{{1, 2}, {3, 4}, {5, 6}})
	if err != nil || y.At(2, 1) != 6 || y.B != 3 || y.T != 2 {
		t.Fatalf("FromRows: %+v %v", y, err)
	}
	_, err = tensor.FromRows[float32]([][]float64{{1, 2}, {3}})
	if !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "rows[1]") {
		t.Errorf("FromRows ragged: %v", err)
	}
	empty, err := tensor.FromRows[float64]([][]float64{})
	if err != nil || empty.B != 0 || empty.IsZero() {
		t.Errorf("FromRows empty: %+v %v (an empty batch is not an absent one)", empty, err)
	}
	rows := tensor.Rows[float64](y)
	if fmt.Sprint(rows) != "[[1 2] [3 4] [5 6]]" {
		t.Errorf("Rows = %v", rows)
	}
	z := tensor.MustNew[float64](3, 2)
	if err := tensor.Convert(z, y); err != nil || z.At(1, 0) != 3 {
		t.Errorf("Convert: %v %v", z, err)
	}
	if err := tensor.Convert(tensor.MustNew[float64](2, 2), y); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("Convert to wrong shape: %v", err)
	}
	if !(tensor.Batch[float32]{}).IsZero() {
		t.Error("zero Batch is not IsZero")
	}
}

func TestRowSharesStorage(t *testing.T) {
	x := tensor.MustNew[float32](2, 3)
	r := x.Row(1)
	r[2] = 7
	if x.At(1, 2) != 7 {
		t.Error("Row copied")
	}
	if cap(r) != 3 {
		t.Errorf("cap(Row) = %d: appending would overwrite the next row", cap(r))
	}
}

func TestValidationNamesArgumentAndPosition(t *testing.T) {
	x, _ := tensor.FromSlice([]float64{0, 1, 2, math.NaN(), 4, 5}, 2, 3)
	err := tensor.CheckFinite("logp", x)
	if !errors.Is(err, tensor.ErrNonFinite) || err.Error() != "logp[1,0]: not finite: NaN" {
		t.Errorf("CheckFinite: %v", err)
	}
	var ae *tensor.ArgError
	if !errors.As(err, &ae) || ae.Arg != "logp" || fmt.Sprint(ae.Index) != "[1 0]" {
		t.Errorf("ArgError: %+v", ae)
	}
	m, _ := tensor.FromSlice([]float32{1, 1, 0, 0.5}, 2, 2)
	if err := tensor.CheckMask("mask", m); !errors.Is(err, tensor.ErrMask) || !strings.Contains(err.Error(), "mask[1,1]") {
		t.Errorf("CheckMask: %v", err)
	}
	w, _ := tensor.FromSlice([]float32{1, -2}, 1, 2)
	if err := tensor.CheckNonNegative("w", w); !errors.Is(err, tensor.ErrRange) || !strings.Contains(err.Error(), "w[0,1]") {
		t.Errorf("CheckNonNegative: %v", err)
	}
	if err := tensor.CheckFiniteVec("r", []float32{1, float32(math.Inf(1))}); !errors.Is(err, tensor.ErrNonFinite) || !strings.Contains(err.Error(), "r[1]") {
		t.Errorf("CheckFiniteVec: %v", err)
	}
	bad := tensor.Batch[float32]{Shape: tensor.Shape{B: 2, T: 2}, Data: make([]float32, 3)}
	if err := bad.Check("adv"); !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "adv") {
		t.Errorf("Check: %v", err)
	}
	if err := tensor.CheckShape("adv", tensor.MustNew[float32](2, 3), tensor.Shape{B: 2, T: 4}); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("CheckShape: %v", err)
	}
}

func TestRowLengthsAndPrefixMask(t *testing.T) {
	m := tensor.MustNew[float32](3, 5)
	if err := tensor.PrefixMask(m, []int{5, 0, 2}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m.Data) != "[1 1 1 1 1 0 0 0 0 0 1 1 0 0 0]" {
		t.Fatalf("PrefixMask: %v", m.Data)
	}
	m.Set(1, 3, 1) // not a prefix any more
	lengths := make([]int, 3)
	total, err := tensor.RowLengths(lengths, m)
	if err != nil || total != 8 || fmt.Sprint(lengths) != "[5 1 2]" {
		t.Errorf("RowLengths = %v %d %v", lengths, total, err)
	}
	m.Set(2, 4, 3)
	if _, err := tensor.RowLengths(lengths, m); !errors.Is(err, tensor.ErrMask) || !strings.Contains(err.Error(), "mask[2,4]") {
		t.Errorf("RowLengths bad mask: %v", err)
	}
	if _, err := tensor.RowLengths(make([]int, 2), m); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("RowLengths short dst: %v", err)
	}
	if err := tensor.PrefixMask(m, []int{1, 6, 0}); !errors.Is(err, tensor.ErrRange) || !strings.Contains(err.Error(), "lengths[1]") {
		t.Errorf("PrefixMask too long: %v", err)
	}
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
