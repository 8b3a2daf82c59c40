package bench

import (
	"testing"

	"github.com/rlpost/rlpost/internal/testkit/benchdata"
)

func TestTurnEnds(t *testing.T) {
	d, err := benchdata.New(16, 300)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := TurnEnds(d, TurnLength)
	if err != nil {
		t.Fatal(err)
	}
	for b := range d.Shape.B {
		m, e := d.Mask.Row(b), ends.Row(b)
		k, last := 0, -1
		for i := range m {
			if m[i] == 0 {
				if e[i] != 0 {
					t.Fatalf("row %d: turn end on masked position %d", b, i)
				}
				continue
			}
			k++
			last = i
			if want := k%TurnLength == 0; want != (e[i] == 1) && i != d.Lengths[b]-1 {
				t.Fatalf("row %d position %d: turn end %v, want %v", b, i, e[i], want)
			}
		}
		if last >= 0 && e[last] != 1 {
			t.Fatalf("row %d: last valid token %d is not a turn end", b, last)
		}
	}
}

// TestOps runs this package's GAE and TAS ops on a small batch: they work
// and allocate nothing per call. The allocation count is process-wide, so a
// run that caught the runtime or the test framework allocating is retried.
func TestOps(t *testing.T) {
	for _, op := range []string{"gae", "bilevel_gae", "tas_weights"} {
		var res Result
		for range 3 {
			var err error
			if res, err = Run(op, "cpu", 8, 512, 5); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if res.AllocsPerIter == 0 {
				break
			}
		}
		if res.AllocsPerIter != 0 || res.NsPerToken <= 0 || res.Tokens <= 0 {
			t.Errorf("%s: %+v", op, res)
		}
	}
}
