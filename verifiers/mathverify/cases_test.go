package mathverify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mvCase is one line of shared/mathverify/mathverify_cases.jsonl.
type mvCase struct {
	ID       string `json:"id"`
	Gold     string `json:"gold"`
	Pred     string `json:"pred"`
	Expected bool   `json:"expected"`
	Category string `json:"category"`
	Notes    string `json:"notes"`
}

// sharedDir finds ../shared/mathverify beside the repository root, or the
// folder named by $RLPOST_MATHVERIFY ("skip" skips the tests).
func sharedDir(t testing.TB) string {
	if d := os.Getenv("RLPOST_MATHVERIFY"); d != "" {
		if d == "skip" {
			t.Skip("RLPOST_MATHVERIFY=skip")
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			m := filepath.Join(d, "..", "shared", "mathverify")
			if _, err := os.Stat(m); err != nil {
				t.Fatalf("missing %s: the Math-Verify cases live beside the repository (or set RLPOST_MATHVERIFY)", m)
			}
			return m
		}
	}
	t.Fatal("no go.mod above the working directory")
	return ""
}

func loadCases(t testing.TB) []mvCase {
	f, err := os.Open(filepath.Join(sharedDir(t), "mathverify_cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mvCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var c mvCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var boxedPrioRe = regexp.MustCompile(`boxed_match_priority=(-?\d+)`)

// caseParams translates the config block of a case's notes into the params
// object an `rlpost verify` line would carry, as JSON would decode it.
func caseParams(notes string) (map[string]any, error) {
	cfg, _, _ := strings.Cut(notes, " || ")
	raw := "{}"
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
					return nil, err
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
	// Round-trip through JSON, so the test sees exactly what rlpost verify
	// decodes (numbers as float64).
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	raw = string(b)
	var out map[string]any
	err = json.Unmarshal([]byte(raw), &out)
	return out, err
}

func TestMathVerifyCases(t *testing.T) {
	cases := loadCases(t)
	if len(cases) != 270 {
		t.Fatalf("%d cases, want 270", len(cases))
	}
	var okT, nT, okF, nF int
	for _, c := range cases {
		params, err := caseParams(c.Notes)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		opts, err := ParseOptions(params)
		if err != nil {
			t.Fatalf("%s: params %v: %v", c.ID, params, err)
		}
		res, err := Verify(context.Background(), c.Gold, c.Pred, opts)
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		if c.Expected {
			nT++
		} else {
			nF++
		}
		if res.Correct == c.Expected {
			if c.Expected {
				okT++
			} else {
				okF++
			}
			continue
		}
		t.Logf("MISS %s (%s) want %v: gold %s | pred %s", c.ID, c.Category, c.Expected, res.Gold, res.Pred)
	}
	pt, pf := 100*float64(okT)/float64(nT), 100*float64(okF)/float64(nF)
	t.Logf("expected true: %d/%d = %.1f%%; expected false: %d/%d = %.1f%%", okT, nT, pt, okF, nF, pf)
	fmt.Printf("mathverify cases: expected true %d/%d (%.1f%%), expected false %d/%d (%.1f%%)\n", okT, nT, pt, okF, nF, pf)
	if pt < 95 || pf < 95 {
		t.Errorf("below 95%%: true %.1f%%, false %.1f%%", pt, pf)
	}
}
