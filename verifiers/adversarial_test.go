package verifiers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adversarialCase is one line of testdata/adversarial.jsonl: a model
// output, ordinary or hostile, with the score a careful human grader gives
// it, the category of hole it probes and why that score is right.
type adversarialCase struct {
	Verifier string           `json:"verifier"`
	Gold     string           `json:"gold"`
	Pred     string           `json:"pred"`
	Params   verifiers.Params `json:"params"`
	Score    float64          `json:"score"`
	Category string           `json:"category"`
	Why      string           `json:"why"`
}

// TestAdversarial scores every case of the adversarial suite through the
// Default registry and requires the human grader's score. A case scored
// 0 for lack of an answer, several answers, a limit or a timeout must say
// so in Result.Reason or be a judged wrong answer; either way it is never
// an error.
func TestAdversarial(t *testing.T) {
	f, err := os.Open("testdata/adversarial.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	type tally struct{ right, all int }
	byCat := map[string]*tally{}
	n := 0
	for line := 1; sc.Scan(); line++ {
		var c adversarialCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "line %d", line)
		require.NotEmpty(t, c.Category, "line %d: every case needs a category and a reason", line)
		require.NotEmpty(t, c.Why, "line %d: every case needs a category and a reason", line)
		n++
		tl := byCat[c.Category]
		if tl == nil {
			tl = &tally{}
			byCat[c.Category] = tl
		}
		tl.all++
		res, err := verifiers.Default.Verify(context.Background(), c.Verifier, c.Pred, c.Gold, c.Params)
		if err != nil {
			t.Errorf("line %d (%s, %s): error %v", line, c.Category, c.Why, err)
			continue
		}
		if math.Abs(res.Score-c.Score) > 1e-9 {
			t.Errorf("line %d (%s: %s): %s(gold %q, pred %.80q) = %v (parsed %q, reason %q), want %v",
				line, c.Category, c.Why, c.Verifier, c.Gold, c.Pred, res.Score, res.Parsed, res.Reason, c.Score)
			continue
		}
		tl.right++
	}
	require.NoError(t, sc.Err())
	assert.GreaterOrEqual(t, n, 150, "cases, want at least 150")
	cats := make([]string, 0, len(byCat))
	for k := range byCat {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	var sb strings.Builder
	for _, k := range cats {
		sb.WriteString(k + " ")
		sb.WriteString(strings.Repeat("+", byCat[k].right))
		sb.WriteString(strings.Repeat("-", byCat[k].all-byCat[k].right))
		sb.WriteByte('\n')
	}
	t.Logf("%d cases in %d categories\n%s", n, len(cats), sb.String())
}
