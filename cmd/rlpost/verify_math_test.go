package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/testkit/mvcases"
	"github.com/stretchr/testify/require"
)

// TestMathVerifyCasesThroughVerify sends Math-Verify's own test cases to
// `rlpost verify` as JSONL, one line per case with "verifier": "math" and the
// case's settings as params, and requires at least 95 % right among the
// cases that must match and 97 % among those that must not.
func TestMathVerifyCasesThroughVerify(t *testing.T) {
	dir, skip, why := mvcases.Dir()
	if skip {
		t.Skip(why)
	}
	cases, err := mvcases.Load(dir)
	require.NoError(t, err)
	var in strings.Builder
	for _, c := range cases {
		params, err := mvcases.Params(c.Notes)
		require.NoError(t, err, "%s", c.ID)
		line, err := json.Marshal(map[string]any{"verifier": "math", "gold": c.Gold, "pred": c.Pred, "params": params})
		require.NoError(t, err)
		in.Write(line)
		in.WriteByte('\n')
	}
	outs, code, _ := runVerify(t, in.String())
	require.Equal(t, 0, code, "exit, lines for cases")
	require.Equal(t, len(cases), len(outs), "exit, lines for cases")
	var tally mvcases.Tally
	for i, c := range cases {
		o := outs[i]
		if strings.Contains(o.Error, "ref: syntax error") {
			// A trusted reference that does not parse is an error by
			// contract; the peer suite has one such gold. It counts as a miss.
			t.Logf("reference refused %s: %s", c.ID, o.Error)
			tally.Add(c.Expected, false)
			continue
		}
		if o.Error != "" || o.Correct == nil {
			t.Errorf("%s: %+v", c.ID, o)
			continue
		}
		tally.Add(c.Expected, *o.Correct)
		if *o.Correct != c.Expected {
			t.Logf("miss %s: expected %v", c.ID, c.Expected)
		}
	}
	t.Logf("rlpost verify on %d Math-Verify cases: %v", len(cases), tally)
	if pt, pf := tally.Percent(); pt < 95 || pf < 97 {
		t.Errorf("below 95%% (must match) or 97%% (must not): %v", tally)
	}
}
