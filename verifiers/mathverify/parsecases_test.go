package mathverify

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/internal/testkit/mvcases"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseCases runs the extraction-only checks of
// mathverify_parse_cases.jsonl that this package can express: choice
// letters (Math-Verify's string extraction) and the rank of \boxed.
func TestParseCases(t *testing.T) {
	dir, skip, why := mvcases.Dir()
	if skip {
		t.Skip(why)
	}
	f, err := os.Open(filepath.Join(dir, "mathverify_parse_cases.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	prioRe := regexp.MustCompile(`boxed_match_priority=(-?\d+)`)
	stringsRe := regexp.MustCompile(`strings=([A-Z,]+)`)
	sc := bufio.NewScanner(f)
	ran := 0
	for sc.Scan() {
		var c struct {
			ID        string   `json:"id"`
			Input     string   `json:"input"`
			Config    string   `json:"config"`
			Reference []string `json:"reference_result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		o := DefaultOptions()
		switch {
		case strings.HasPrefix(c.Config, "string extraction only"):
			o.Match = MatchChoice
			o.Choices = strings.ReplaceAll(stringsRe.FindStringSubmatch(c.Config)[1], ",", "")
		case strings.Contains(c.Config, "boxed_match_priority"):
			o.Match = MatchLatex
			o.BoxedPriority, _ = strconv.Atoi(prioRe.FindStringSubmatch(c.Config)[1])
		case strings.Contains(c.Config, "malformed_operators=true"):
			o.Match = MatchLatex
		default:
			// malformed_operators=false, which rejects \frac12, has no
			// counterpart: \frac12 is always 1/2 here.
			t.Logf("%s: not applicable (%s)", c.ID, c.Config)
			continue
		}
		ran++
		a, _ := extract(c.Input, &o, false, slot.None, newBudget(context.Background(), time.Second))
		got := ""
		if a.node != nil {
			got = a.node.String()
			if w, ok := wordForm(a.node); ok && o.Match == MatchChoice {
				got = strings.ToUpper(w)
			}
		}
		want := ""
		if len(c.Reference) > 0 {
			want = strings.ToUpper(c.Reference[0])
		}
		assert.Equal(t, want, got, "%s: extract(%q)", c.ID, c.Input)
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 11, ran, "ran parse cases, want 11")
}
