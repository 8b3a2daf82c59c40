// Package golden reads the shared golden vectors (request/expected pairs
// computed with torch autograd in float64) for tests.
//
// The vectors live in ../shared/golden beside the repository root, or in the
// folder named by $RLPOST_GOLDEN. Tests that need them fail when neither
// exists, unless RLPOST_GOLDEN=skip.
package golden

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Case is one line of a golden file.
type Case struct {
	// Line is the 1-based line number, for messages.
	Line     int
	Request  json.RawMessage `json:"request"`
	Expected json.RawMessage `json:"expected"`
}

// Dir returns the golden folder, or "" if none is found.
func Dir() string {
	if d := os.Getenv("RLPOST_GOLDEN"); d != "" {
		if d == "skip" {
			return ""
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			g := filepath.Join(d, "..", "shared", "golden")
			if _, err := os.Stat(g); err == nil {
				return g
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
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
			return nil, fmt.Errorf("%s.jsonl:%d: %v", op, n, err)
		}
		cases = append(cases, c)
	}
	return cases, sc.Err()
}

// Load returns the cases of op.jsonl, failing t if the golden folder is
// missing (or skipping it when RLPOST_GOLDEN=skip).
func Load(t testing.TB, op string) []Case {
	t.Helper()
	dir := Dir()
	if dir == "" {
		if os.Getenv("RLPOST_GOLDEN") == "skip" {
			t.Skip("RLPOST_GOLDEN=skip")
		}
		t.Fatal("golden vectors not found: expected ../shared/golden beside the repository, or set RLPOST_GOLDEN")
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
// absolute floor for expected values that are exactly or nearly 0.
const (
	RelTol = 1e-4
	AbsTol = 1e-7
)

// CheckRows fails t for the first element of got that is not Close to want.
func CheckRows(t testing.TB, what string, got, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		CheckVec(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

// CheckVec fails t for the first element of got that is not Close to want.
func CheckVec(t testing.TB, what string, got, want []float64) {
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
