// Package mvcases reads the Math-Verify peer test cases
// (mathverify_cases.jsonl, from Hugging Face's Math-Verify test suite) and
// turns each case's
// configuration notes into the params object of an `rlpost verify` line.
// The math verifier's own tests and the command's tests share it, so both
// check exactly the same requests.
package mvcases

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Case is one line of mathverify_cases.jsonl.
type Case struct {
	ID       string `json:"id"`
	Gold     string `json:"gold"`
	Pred     string `json:"pred"`
	Expected bool   `json:"expected"`
	Category string `json:"category"`
	Notes    string `json:"notes"`
}

// Dir returns the folder of the peer cases: $RLPOST_MATHVERIFY when set, else
// a folder "shared/mathverify" beside the module root. The peer's data is not
// part of the repository, so its absence is not an error: Dir returns
// skip = true with the reason in why, and the tests that use it skip.
// RLPOST_MATHVERIFY=skip skips them on purpose.
func Dir() (dir string, skip bool, why string) {
	if d := os.Getenv("RLPOST_MATHVERIFY"); d != "" {
		return d, d == "skip", "RLPOST_MATHVERIFY=skip"
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", true, err.Error()
	}
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			m := filepath.Join(d, "..", "shared", "mathverify")
			if _, err := os.Stat(filepath.Join(m, "mathverify_cases.jsonl")); err != nil {
				return "", true, "the Math-Verify peer suite is not beside the module (set RLPOST_MATHVERIFY to its folder to run it)"
			}
			return m, false, ""
		}
	}
	return "", true, "no go.mod above " + wd
}

// Load reads the cases in dir.
func Load(dir string) ([]Case, error) {
	f, err := os.Open(filepath.Join(dir, "mathverify_cases.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Case
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var c Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

var boxedPrioRe = regexp.MustCompile(`boxed_match_priority=(-?\d+)`)

// Params translates the config block of a case's notes into the params
// object an `rlpost verify` line carries, as JSON decodes it (numbers as
// float64): match_types for tests that extract only LaTeX or only plain
// expressions, boxed_priority where it differs from 0, precision where
// float_rounding differs from 6, strict false, allow_set_relation_comp true.
func Params(notes string) (map[string]any, error) {
	cfg, _, _ := strings.Cut(notes, " || ")
	params := map[string]any{}
	for _, kv := range strings.Split(cfg, "; ") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		switch k {
		case "targets":
			var types []any
			if strings.Contains(v, "latex") {
				types = append(types, "latex")
				if m := boxedPrioRe.FindStringSubmatch(v); m != nil && m[1] != "0" {
					p, _ := strconv.Atoi(m[1])
					params["boxed_priority"] = p
				}
			}
			if strings.Contains(v, "expr") {
				types = append(types, "expr")
			}
			if len(types) != 2 {
				params["match_types"] = types
			}
		case "float_rounding":
			if v != "6" {
				p, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("float_rounding=%q: %v", v, err)
				}
				params["precision"] = p
			}
		case "strict":
			if v == "false" {
				params["strict"] = false
			}
		case "allow_set_relation_comp":
			if v == "true" {
				params["allow_set_relation_comp"] = true
			}
		}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = json.Unmarshal(b, &out)
	return out, err
}

// Tally counts right answers among the cases that must match and those
// that must not.
type Tally struct{ RightTrue, True, RightFalse, False int }

// Add counts one verdict.
func (t *Tally) Add(expected, got bool) {
	if expected {
		t.True++
		if got {
			t.RightTrue++
		}
	} else {
		t.False++
		if !got {
			t.RightFalse++
		}
	}
}

// Percent returns the two shares of right answers.
func (t Tally) Percent() (mustMatch, mustNot float64) {
	return 100 * float64(t.RightTrue) / float64(max(t.True, 1)), 100 * float64(t.RightFalse) / float64(max(t.False, 1))
}

func (t Tally) String() string {
	pt, pf := t.Percent()
	return fmt.Sprintf("must match %d/%d (%.1f%%), must not match %d/%d (%.1f%%)", t.RightTrue, t.True, pt, t.RightFalse, t.False, pf)
}
