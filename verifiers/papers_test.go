package verifiers_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shared robustness tests run every registered verifier against the
// reference validRefs gives it.
func init() {
	validRefs["temporal_iou"] = "[3, 7]"
	validRefs["think_boxed_format"] = ""
	validRefs["vagen_format"] = ""
	validRefs["structured_f1"] = `{"player": "row 2", "box0": ["above player"]}`
}

func verifyDefault(t *testing.T, name, pred, ref string, p verifiers.Params) verifiers.Result {
	t.Helper()
	res, err := verifiers.Default.Verify(context.Background(), name, pred, ref, p)
	require.NoError(t, err, "%s(%q, %q, %v)", name, pred, ref, p)
	return res
}

func TestTemporalIoU(t *testing.T) {
	// The worked value: [2.5, 7.0] against [3.0, 7.0] is 4/4.5.
	if got := verifiers.TemporalIoU(verifiers.Interval{2.5, 7}, verifiers.Interval{3, 7}); math.Abs(got-4/4.5) > 1e-15 {
		t.Errorf("TemporalIoU = %v, want 4/4.5", got)
	}
	for _, c := range []struct {
		pred, ref string
		score     float64
		correct   bool
	}{
		{"<think>the kitten moves at 3 s</think><answer>[2.5, 7.0]</answer>", "[3.0, 7.0]", 4 / 4.5, true},
		{"<answer>(2.5s, 7s)</answer>", "[3, 7]", 4 / 4.5, true},
		{"from 2.5s to 7s", "[3, 7]", 4 / 4.5, true},
		{"[2.5-7.0]", "[3, 7]", 4 / 4.5, true},
		{"<answer>[0, 2]</answer>", "[3, 7]", 0, false},            // disjoint
		{"<answer>[3, 5]</answer>", "[3, 7]", 0.5, true},           // inside: 2/4
		{"<answer>[1, 4]</answer>", "[3, 7]", 1.0 / 6, false},      // overlap 1, hull 6
		{"<answer>[7, 3]</answer>", "[3, 7]", 0, false},            // reversed
		{"<answer>[-1, 3]</answer>", "[3, 7]", 0, false},           // negative
		{"<answer>no idea</answer>", "[3, 7]", 0, false},           // nothing
		{"<answer>1, 2 or 3</answer>", "[3, 7]", 0, false},         // three numbers
		{"<answer>[4, 4]</answer>", "[4, 4]", 1, true},             // equal points
		{"[1, 2] then <answer>[3, 7]</answer>", "[3, 7]", 1, true}, // the answer block wins
	} {
		res := verifyDefault(t, "temporal_iou", c.pred, c.ref, nil)
		assert.InDelta(t, c.score, res.Score, 1e-12, "temporal_iou(%q, %q) = %+v", c.pred, c.ref, res)
		assert.Equal(t, c.correct, res.Correct, "temporal_iou(%q, %q) = %+v", c.pred, c.ref, res)
	}
	res := verifyDefault(t, "temporal_iou", "[1, 4]", "[3, 7]", verifiers.Params{"threshold": 0.1})
	assert.True(t, res.Correct, "threshold 0.1 does not accept IoU 1/6")
	for _, ref := range []string{"", "[3]", "[7, 3]", "[-1, 2]", `"3-7"`} {
		_, err := verifiers.Default.Verify(context.Background(), "temporal_iou", "[3, 7]", ref, nil)
		assert.ErrorIs(t, err, verifiers.ErrSyntax, "ref %q: error %v, want ErrSyntax", ref, err)
	}
	_, err := verifiers.Default.Verify(context.Background(), "temporal_iou", "[3, 7]", "[3, 7]", verifiers.Params{"thresh": 1})
	assert.ErrorIs(t, err, verifiers.ErrParam, "unknown parameter: %v, want ErrParam", err)
}

func TestThinkBoxedFormat(t *testing.T) {
	long := "<think>" + strings.Repeat("x", 80) + "</think>"
	for _, c := range []struct {
		pred string
		want bool
	}{
		{long + `\boxed{96}`, true},
		{"<think>12 × 8</think>" + `\boxed{96}`, true}, // 2 of 22 runes
		{long, false},                       // no \boxed{}
		{long + long + `\boxed{96}`, false}, // two <think> blocks
		{"</think><think>" + strings.Repeat("x", 80) + `\boxed{1}`, false},
		{`<think>a</think>\boxed{` + strings.Repeat("9", 20) + "}", false}, // boxed share 20/47 > 20 %
		{long + `\boxed{` + strings.Repeat("9", 27) + "}", false},          // 27 of 95 + 7 + 27 + 1 = 130 runes: 0.2077
		{long + `\boxed{1`, false},                                         // never closes
		{long + `\boxed{\frac{1}{2}}`, true},
	} {
		res := verifyDefault(t, "think_boxed_format", c.pred, "", nil)
		ok, share := verifiers.ThinkBoxed(c.pred, 0.2)
		assert.Equal(t, c.want, ok, "ThinkBoxed(%q) = (share %v)", c.pred, share)
		if res.Correct != c.want || (res.Score == 1) != c.want {
			t.Errorf("think_boxed_format(%q) = %+v, want %v (share %v)", c.pred, res, c.want, share)
		}
	}
	// The boundary is inclusive: 26 of 130 runes is exactly 20 %.
	exact := "<think>" + strings.Repeat("x", 81) + "</think>" + `\boxed{` + strings.Repeat("9", 26) + "}"
	if ok, share := verifiers.ThinkBoxed(exact, 0.2); !ok || share != 0.2 {
		t.Errorf("ThinkBoxed at exactly 20%% = %v, %v", ok, share)
	}
	res := verifyDefault(t, "think_boxed_format", `<think>a</think>\boxed{`+strings.Repeat("9", 20)+"}", "", verifiers.Params{"max_ratio": 0.5})
	assert.True(t, res.Correct, "max_ratio 0.5: %+v", res)
	_, err := verifiers.Default.Verify(context.Background(), "think_boxed_format", "", "", verifiers.Params{"max_ratio": 0})
	assert.ErrorIs(t, err, verifiers.ErrParam, "max_ratio 0: %v, want ErrParam", err)
}

func TestVAGENFormat(t *testing.T) {
	const (
		obs  = "<observation>The box is below the player</observation>"
		rsn  = "<reasoning>I need to go down</reasoning>"
		pred = "<prediction>The box will be on the target</prediction>"
		ans  = "<answer>Down</answer>"
	)
	cases := map[string][]struct {
		resp string
		want bool
	}{
		verifiers.VAGENNoThink: {
			{ans, true},
			{"  " + ans + "\n", true},
			{"<think>x</think>" + ans, false},
			{"<answer> </answer>", false},
			{"Down", false},
		},
		verifiers.VAGENFreeThink: {
			{"<think>go down</think>" + ans, true},
			{"<think>go down</think>\n" + ans, true},
			{ans, false},
			{"<think></think>" + ans, false},
			{"<think>go down</think>then" + ans, false},
		},
		verifiers.VAGENGrounding: {
			{"<think>" + obs + rsn + "</think>" + ans, true},
			{"<think>" + obs + "</think>" + ans, false}, // §2.2's form, without <reasoning>
			{"<think>" + obs + rsn + pred + "</think>" + ans, false},
		},
		verifiers.VAGENWorldModeling: {
			{"<think>" + rsn + pred + "</think>" + ans, true},
			{"<think>" + pred + "</think>" + ans, false},
			{"<think>" + pred + rsn + "</think>" + ans, false}, // order
		},
		verifiers.VAGENGroundingWorldModeling: {
			{"<think>" + obs + rsn + pred + "</think>" + ans, true},
			{"<think>\n" + obs + "\n" + rsn + "\n" + pred + "\n</think>\n" + ans, true},
			{"<think>" + obs + pred + "</think>" + ans, false}, // <reasoning> is required
			{"<think>" + obs + rsn + pred + "</think>" + ans + ans, false},
			{"<think>" + obs + "x" + rsn + pred + "</think>" + ans, false},
			{"<think>" + obs + rsn + pred + ans + "</think>", false},
		},
	}
	for style, cs := range cases {
		for _, c := range cs {
			res := verifyDefault(t, "vagen_format", c.resp, "", verifiers.Params{"style": style})
			if res.Correct != c.want || (res.Score == 1) != c.want {
				t.Errorf("vagen_format %s (%q) = %+v, want %v", style, c.resp, res, c.want)
			}
		}
	}
	if res := verifyDefault(t, "vagen_format", "<think>"+obs+rsn+pred+"</think>"+ans, "", nil); !res.Correct {
		t.Error("the default style is not grounding_worldmodeling")
	}
	for _, p := range []verifiers.Params{{"style": "grounding-worldmodeling"}, {"style": 1}, {"style": "no_think", "x": 1}} {
		_, err := verifiers.Default.Verify(context.Background(), "vagen_format", ans, "", p)
		assert.ErrorIs(t, err, verifiers.ErrParam, "params %v: %v, want ErrParam", p, err)
	}
}

func TestStructuredF1(t *testing.T) {
	gold := `{"player": "row 2 col 1", "box0": ["above player", "left of target0"], "target0": {"row": 1, "col": 3}}`
	for _, c := range []struct {
		pred    string
		score   float64
		correct bool
	}{
		{gold, 1, true},
		// Order, case and spacing do not matter; 1.0 is 1.
		{`{"Box0": ["LEFT of  target0", "above player"], "player": "Row 2 col 1", "target0": {"col": 3.0, "row": 1}}`, 1, true},
		// 4 of 5 facts: precision 1, recall 0.8, F1 = 8/9.
		{`{"player": "row 2 col 1", "box0": ["above player"], "target0": {"row": 1, "col": 3}}`, 8.0 / 9, true},
		// 2 right, 2 wrong: P = 2/4, R = 2/5, F1 = 4/9 < 0.7.
		{`{"player": "row 3", "box0": ["above player", "below target0"], "target0": {"row": 1}}`, 4.0 / 9, false},
		{"<think>s</think><answer>" + gold + "</answer>", 1, true},
		{"The state is " + gold + " as parsed.", 1, true},
		{"no dictionary here", 0, false},
		{`["player"]`, 0, false},
		{`{}`, 0, false},
	} {
		res := verifyDefault(t, "structured_f1", c.pred, gold, nil)
		assert.InDelta(t, c.score, res.Score, 1e-12, "structured_f1(%q) = %+v", c.pred, res)
		assert.Equal(t, c.correct, res.Correct, "structured_f1(%q) = %+v", c.pred, res)
	}
	if res := verifyDefault(t, "structured_f1", "{}", "{}", nil); res.Score != 1 {
		t.Errorf("empty against empty: %+v, want 1", res)
	}
	_, err := verifiers.Default.Verify(context.Background(), "structured_f1", "{}", "[1]", nil)
	assert.ErrorIs(t, err, verifiers.ErrSyntax, "ref not an object: %v, want ErrSyntax", err)
	deep := strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40)
	if res := verifyDefault(t, "structured_f1", deep, gold, nil); res.Score != 0 || !strings.HasPrefix(res.Parsed, "limit") {
		t.Errorf("over the depth limit: %+v, want 0 with a limit reason", res)
	}
	_, err = verifiers.StructuredFacts(deep)
	assert.ErrorIs(t, err, verifiers.ErrTooLarge, "StructuredFacts(deep): %v, want ErrTooLarge", err)
}
