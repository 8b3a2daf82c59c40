package main

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The verifiers issue 19 added answer `rlpost verify` with the papers'
// worked values (docs/conformance.md).
func TestVerifyPaperVerifiers(t *testing.T) {
	cases := []struct {
		line    string
		score   float64
		correct bool
	}{
		{`{"verifier": "temporal_iou", "gold": "[3.0, 7.0]", "pred": "<answer>[2.5, 7.0]</answer>"}`, 4 / 4.5, true},
		{`{"verifier": "temporal_iou", "gold": "[3, 7]", "pred": "<answer>[7, 3]</answer>"}`, 0, false},
		{`{"verifier": "think_boxed_format", "pred": "<think>12 times 8 is 96</think> The answer is \\boxed{96}."}`, 1, true},
		{`{"verifier": "think_boxed_format", "pred": "<think>a</think>\\boxed{99999999999999999999}"}`, 0, false},
		{`{"verifier": "vagen_format", "pred": "<think><observation>a</observation><reasoning>r</reasoning><prediction>b</prediction></think><answer>Up</answer>", "params": {"style": "grounding_worldmodeling"}}`, 1, true},
		{`{"verifier": "vagen_format", "pred": "<think><observation>a</observation><prediction>b</prediction></think><answer>Up</answer>", "params": {"style": "grounding_worldmodeling"}}`, 0, false},
		{`{"verifier": "vagen_format", "pred": "<answer>Up</answer>", "params": {"style": "no_think"}}`, 1, true},
		{`{"verifier": "structured_f1", "gold": "{\"box0\": [\"above player\", \"left of target\"], \"player\": \"row 2\"}", "pred": "{\"box0\": [\"above player\"], \"player\": \"row 2\"}"}`, 0.8, true},
	}
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.line + "\n")
	}
	outs, code, stderr := runVerify(t, in.String())
	require.Equal(t, 0, code, "exit, stderr, lines")
	require.Equal(t, "", stderr, "exit, stderr, lines")
	require.Equal(t, len(cases), len(outs), "exit, stderr, lines")
	for i, c := range cases {
		o := outs[i]
		if o.Error != "" || math.Abs(*o.Score-c.score) > 1e-12 || *o.Correct != c.correct {
			t.Errorf("line %d %s: got %+v (score %v), want %v %v", i+1, c.line, o, deref(o.Score), c.score, c.correct)
		}
	}
}
