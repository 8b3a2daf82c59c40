// Package golden reads the conformance vectors: request/expected pairs for
// every `rlpost conform` op, computed by the repository's own torch float64
// reference (testdata/gen, gradients by autograd) and committed under
// testdata/golden. Package tests and `rlpost golden` share it, so both
// compare with the same tolerance.
//
// The package does not import testing, so the command-line tool can link it
// without pulling the test framework into the binary; Load takes any value
// with the few methods of testing.TB it needs.
package golden

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Case is one line of a golden file.
type Case struct {
	// Line is the 1-based line number, for messages.
	Line     int
	Request  json.RawMessage `json:"request"`
	Expected json.RawMessage `json:"expected"`
}

// Dir returns the folder of the vectors: $RLPOST_GOLDEN when set, else
// testdata/golden of the module that contains the working directory.
func Dir() (string, error) {
	if d := os.Getenv("RLPOST_GOLDEN"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "testdata", "golden"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("golden: no go.mod above %s", wd)
		}
	}
}

// Read returns the cases of golden file op.jsonl in dir.
func Read(dir, op string) ([]Case, error) {
	f, err := os.Open(filepath.Join(dir, op+".jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []Case
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		c := Case{Line: n}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s.jsonl:%d: %w", op, n, err)
		}
		cases = append(cases, c)
	}
	return cases, sc.Err()
}

// TB is the part of testing.TB that Load and the Check functions use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Load returns the cases of op.jsonl, failing t if they cannot be read or
// there are none.
func Load(t TB, op string) []Case {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := Read(dir, op)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s.jsonl holds no cases", op)
	}
	return cases
}

// Close reports whether got is within the golden tolerance of want:
// |got − want| ≤ RelTol·|want| + AbsTol.
func Close(got, want float64) bool {
	return math.Abs(got-want) <= RelTol*math.Abs(want)+AbsTol
}

// The tolerance every golden comparison uses: relative 1e-4, with an
// absolute floor for expected values that are exactly or nearly 0. It is
// what float32 storage allows; float64 paths agree far more closely.
const (
	RelTol = 1e-4
	AbsTol = 1e-7
)

// CheckRows fails t for the first element of got that is not Close to want.
func CheckRows(t TB, what string, got, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		CheckVec(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

// CheckVec fails t for the first element of got that is not Close to want.
func CheckVec(t TB, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !Close(got[i], want[i]) {
			t.Fatalf("%s[%d] = %.10g, want %.10g", what, i, got[i], want[i])
		}
	}
}
