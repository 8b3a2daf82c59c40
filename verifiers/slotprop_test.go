package verifiers_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xnorm "golang.org/x/text/unicode/norm"
)

// refCase is one verifier that compares with a reference, with a gold, a
// right candidate (scores > 0) and a different wrong one, as bare answer
// texts. The property tests below build responses around them by
// category; nothing in them is a list of hand-picked hacks.
type refCase struct {
	verifier     string
	params       verifiers.Params
	gold         string
	right, wrong string
}

var refCases = []refCase{
	{"math", nil, "42", "42", "41"},
	{"math", nil, `\frac{3}{4}`, `\frac{3}{4}`, `\frac{4}{5}`},
	{"number", nil, "1024", "1,024", "1023"},
	{"choice", nil, "B", "(B)", "(C)"},
	{"choice", verifiers.Params{"options": []any{"Paris", "London", "Rome"}}, "A", "Paris", "Rome"},
	{"iou", nil, "[10, 20, 110, 220]", "[10, 20, 110, 220]", "[300, 300, 400, 420]"},
	{"iou", nil, "[10, 20, 110, 220]", `{"x1": 10, "y1": 20, "x2": 110, "y2": 220}`, "[300, 300, 400, 420]"},
	{"detection", nil, `[{"label": "cat", "bbox": [10, 20, 110, 220]}]`, `[{"label": "cat", "bbox": [10, 20, 110, 220]}]`, `[{"label": "dog", "bbox": [300, 300, 400, 420]}]`},
	{"temporal_iou", nil, "[2.5, 70]", "[2.5, 70]", "[80, 95]"},
	{"temporal_iou", nil, "[65, 90]", "[1:05, 1:30]", "[2:00, 2:30]"},
	{"ocr", nil, "HELLO WORLD 2024", "HELLO WORLD 2024", "GOODBYE MOON 1999"},
	{"answer", nil, "Paris 75", "Paris 75", "London 44"},
	{"qa", nil, `["Barack Obama", "Obama"]`, "barack obama", "George Bush"},
	{"qa", verifiers.Params{"metric": "f1"}, "the Eiffel Tower in Paris", "Eiffel Tower, Paris", "Big Ben, London"},
	{"structured_f1", nil, `{"player": "row 2 col 1", "box0": ["above player"]}`, `{"player": "row 2 col 1", "box0": ["above player"]}`, `{"player": "row 9 col 9", "box0": ["below target"]}`},
}

// wrappers place a bare answer in a response the way models write one;
// the reasoning may mention the wrong candidate, which is never read.
var wrappers = []struct {
	name string
	f    func(c, w string) string
}{
	{"think+answer", func(c, w string) string {
		return "<think>Is it " + w + "? Let me check again.</think>\n<answer>" + c + "</answer>"
	}},
	{"think+phrase", func(c, w string) string { return "<think>Maybe " + w + ".</think>\nThe answer is " + c }},
	{"answer only", func(c, _ string) string { return "<answer>" + c + "</answer>" }},
}

func verifyCase(t *testing.T, c refCase, pred string) verifiers.Result {
	t.Helper()
	res, err := verifiers.Default.Verify(context.Background(), c.verifier, pred, c.gold, c.params)
	require.NoError(t, err, "%s(%q, %q)", c.verifier, pred, c.gold)
	return res
}

// TestSlotRuleBaseline: every case's right answer pays in every wrapper
// and its wrong one does not; the other properties build on this.
func TestSlotRuleBaseline(t *testing.T) {
	for _, c := range refCases {
		for _, w := range wrappers {
			r := verifyCase(t, c, w.f(c.right, c.wrong))
			assert.Greater(t, r.Score, 0.5, "%s %s gold %q: right %q: %+v", c.verifier, w.name, c.gold, c.right, r)
			r = verifyCase(t, c, w.f(c.wrong, c.right))
			assert.Less(t, r.Score, 0.5, "%s %s gold %q: wrong %q: %+v", c.verifier, w.name, c.gold, c.wrong, r)
		}
	}
}

// hedges join two different candidates in one slot.
var hedges = []string{" or ", ", or possibly ", " / ", "\nor\n", " or maybe "}

// TestAnyHedgeScoresZero: two different candidates in the answer slot, in
// either order and in any wrapper, score 0.
func TestAnyHedgeScoresZero(t *testing.T) {
	for _, c := range refCases {
		for _, w := range wrappers {
			for _, h := range hedges {
				for _, pair := range [][2]string{{c.right, c.wrong}, {c.wrong, c.right}} {
					pred := w.f(pair[0]+h+pair[1], c.wrong)
					r := verifyCase(t, c, pred)
					assert.Zero(t, r.Score, "%s %s: %q: %+v", c.verifier, w.name, pred, r)
				}
			}
		}
	}
}

// retractions withdraw or replace the answer before them.
var retractions = []func(w string) string{
	func(w string) string { return " Actually no, it is " + w + "." },
	func(string) string { return "\n\nWait, that's wrong." },
	func(w string) string { return "\nHmm, on second thought: " + w },
	func(string) string { return " Sorry, I made a mistake above." },
	func(w string) string { return "\nOops. " + w },
}

// TestAnyRetractionScoresZero: text after the answer that retracts or
// replaces it, inside the region or after </answer>, scores 0.
func TestAnyRetractionScoresZero(t *testing.T) {
	for _, c := range refCases {
		for _, rf := range retractions {
			for _, pred := range []string{
				"<think>ok</think><answer>" + c.right + rf(c.wrong) + "</answer>",
				"<think>ok</think><answer>" + c.right + "</answer>" + rf(c.wrong),
				"<think>ok</think>The answer is " + c.right + "." + rf(c.wrong),
			} {
				r := verifyCase(t, c, pred)
				assert.Zero(t, r.Score, "%s: %q: %+v", c.verifier, pred, r)
			}
		}
	}
}

// TestAnswerOnlyInThinkScoresZero: an answer that appears only in the
// reasoning scores 0, whatever follows the reasoning.
func TestAnswerOnlyInThinkScoresZero(t *testing.T) {
	for _, c := range refCases {
		for _, after := range []string{"", "\n", "\nI am done.", "<answer></answer>", "<answer>", "\nSee above."} {
			for _, inner := range []string{c.right, "The answer is " + c.right + ".", "<answer>" + c.right + "</answer>"} {
				pred := "<think>" + inner + "</think>" + after
				r := verifyCase(t, c, pred)
				assert.Zero(t, r.Score, "%s: %q: %+v", c.verifier, pred, r)
			}
		}
		pred := "<think>The answer is " + c.right + "." // cut off in its reasoning
		assert.Zero(t, verifyCase(t, c, pred).Score, "%s: %q", c.verifier, pred)
	}
}

// invisibleRunes are characters that render as nothing.
var invisibleRunes = []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u3164", "\u180e", "\ufe0f", "\u202a"}

// insertions returns pred with an invisible character inserted at n
// positions (rune boundaries, chosen by a seeded generator) plus at every
// position of the first 64 bytes.
func insertions(pred string, n int, rng *rand.Rand) []string {
	var out []string
	add := func(i int) {
		if i < len(pred) && !utf8.RuneStart(pred[i]) {
			return
		}
		out = append(out, pred[:i]+invisibleRunes[rng.IntN(len(invisibleRunes))]+pred[i:])
	}
	for i := 0; i <= min(len(pred), 64); i++ {
		add(i)
	}
	for range n {
		add(rng.IntN(len(pred) + 1))
	}
	return out
}

// TestAnyInvisibleInsertionKeepsTheVerdict: inserting a zero-width or
// other invisible character anywhere into a fair answer, a hedge or a
// retraction changes no score.
func TestAnyInvisibleInsertionKeepsTheVerdict(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	for _, c := range refCases {
		preds := []string{}
		for _, w := range wrappers {
			preds = append(preds, w.f(c.right, c.wrong), w.f(c.right+" or "+c.wrong, c.wrong))
		}
		preds = append(preds,
			"<think>ok</think><answer>"+c.right+"</answer> Actually, that's wrong.",
			"<think>The answer is "+c.right+"</think>",
			"The answer is not "+c.wrong+"; it is "+c.right+".")
		for _, pred := range preds {
			want := verifyCase(t, c, pred)
			for _, in := range insertions(pred, 32, rng) {
				got := verifyCase(t, c, in)
				if !assert.InDelta(t, want.Score, got.Score, 1e-12, "%s: %q scores %v (%s), %q scores %v (%s)",
					c.verifier, pred, want.Score, want.Reason, in, got.Score, got.Reason) {
					break
				}
			}
		}
	}
}

// reencodings rewrite the digits of an answer in another script, or the
// whole response in Unicode NFD.
var reencodings = []struct {
	name string
	f    func(string) string
}{
	{"fullwidth digits", digitsFrom(0xFF10)},
	{"Arabic-Indic digits", digitsFrom(0x0660)},
	{"Devanagari digits", digitsFrom(0x0966)},
	{"mathematical bold digits", digitsFrom(0x1D7CE)},
	{"NFD", xnorm.NFD.String},
	{"fullwidth letters", func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
				return r - 'A' + 0xFF21
			}
			return r
		}, s)
	}},
}

func digitsFrom(zero rune) func(string) string {
	return func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return zero + r - '0'
			}
			return r
		}, s)
	}
}

// TestFairReencodingsPay: a right answer whose digits are written in
// another script, or which is in NFD, scores what the ASCII answer scores.
func TestFairReencodingsPay(t *testing.T) {
	for _, c := range refCases {
		for _, w := range wrappers {
			base := verifyCase(t, c, w.f(c.right, c.wrong))
			for _, re := range reencodings {
				pred := w.f(re.f(c.right), c.wrong)
				got := verifyCase(t, c, pred)
				assert.InDelta(t, base.Score, got.Score, 1e-12, "%s %s %s: %q: %+v", c.verifier, w.name, re.name, pred, got)
			}
		}
	}
}

// TestFairFormsPay: forms a careful grader accepts, by verifier.
func TestFairFormsPay(t *testing.T) {
	for _, c := range []struct {
		verifier, gold, pred string
		params               verifiers.Params
	}{
		{"choice", "B", "<answer>(B) and not (A)</answer>", nil},
		{"choice", "B", "The answer is B, definitely not C.", nil},
		{"choice", "B", "<answer>B (not A)</answer>", nil},
		{"choice", "B", "<answer>B instead of D</answer>", nil},
		{"number", "42", "The answer is forty-two.", nil},
		{"number", "-7", "The answer is minus 7.", nil},
		{"number", "-7", "<answer>negative seven</answer>", nil},
		{"math", "42", "The answer is forty-two.", nil},
		{"math", `\frac{1}{2}`, `The answer is ½.`, nil},
		{"math", "27", `The answer is 3³.`, nil},
		{"number", "3.5", "<answer>3½</answer>", nil},
		{"temporal_iou", "[65, 90]", "<answer>from 01:05 to 01:30</answer>", nil},
		{"temporal_iou", "[3725, 3730]", "<answer>[1:02:05, 1:02:10]</answer>", nil},
		{"iou", "[10, 20, 110, 220]", `<answer>{"x_min": 10, "y_min": 20, "x_max": 110, "y_max": 220}</answer>`, nil},
		{"iou", "[10, 20, 110, 220]", `<answer>{"bbox_2d": [10, 20, 110, 220], "label": "cat"}</answer>`, nil},
		{"detection", `[{"label": "cat", "bbox": [1, 2, 30, 40]}]`, "I see a cat [the tabby] near [the door].\n```json\n[{\"label\": \"cat\", \"bbox_2d\": [1, 2, 30, 40]}]\n```", nil},
		{"structured_f1", `{"player": "row 2", "count": 3}`, `<answer>{'player': 'row 2', 'count': '3',}</answer>`, nil},
		{"structured_f1", `{"ok": true, "x": null}`, `<answer>{'ok': True, 'x': None}</answer>`, nil},
		{"ocr", "STOP", `<answer>"STOP"</answer>`, nil},
		{"ocr", "café crème", "<answer>" + xnorm.NFD.String("café crème") + "</answer>", nil},
		{"answer", "Paris", `The answer is "Paris".`, nil},
	} {
		res, err := verifiers.Default.Verify(context.Background(), c.verifier, c.pred, c.gold, c.params)
		require.NoError(t, err, "%s %q", c.verifier, c.pred)
		assert.Equal(t, 1.0, res.Score, "%s(gold %q, pred %q): %+v", c.verifier, c.gold, c.pred, res)
	}
}

// TestSlotRuleCategories prints how many generated responses each
// property covered, so a shrinking generator is noticed.
func TestSlotRuleCategories(t *testing.T) {
	n := len(refCases) * len(wrappers)
	t.Logf("%d verifier cases × %d wrappers; %d hedges, %d retractions, %d re-encodings",
		len(refCases), len(wrappers), len(hedges), len(retractions), len(reencodings))
	assert.GreaterOrEqual(t, n, 30)
}

// TestFormatSectionsNeedVisibleContent: in every format verifier, a
// section whose content is only invisible characters and spaces does not
// count by default, and counts under the paper's rule ("visible": false);
// inserting invisible characters into a visible response changes nothing.
func TestFormatSectionsNeedVisibleContent(t *testing.T) {
	type fmtCase struct {
		verifier string
		params   verifiers.Params
		good     func(fill string) string
	}
	cases := []fmtCase{
		{"format", nil, func(f string) string { return "<think>" + f + "</think><answer>" + f + "</answer>" }},
		{"format_tags", nil, func(f string) string { return "<think>" + f + "</think><answer>" + f + "</answer>" }},
		{"think_boxed_format", nil, func(f string) string {
			return "<think>" + f + "</think> The result of the long computation above is \\boxed{" + f + "}"
		}},
		{"vagen_format", verifiers.Params{"style": "free_think"}, func(f string) string { return "<think>" + f + "</think><answer>" + f + "</answer>" }},
		{"vagen_format", nil, func(f string) string {
			return "<think><observation>" + f + "</observation><reasoning>" + f + "</reasoning><prediction>" + f +
				"</prediction></think><answer>" + f + "</answer>"
		}},
	}
	rng := rand.New(rand.NewPCG(26, 2))
	for _, c := range cases {
		visible := verify(t, c.verifier, c.good("x"), "", c.params)
		require.Equal(t, 1.0, visible.Score, "%s: visible content", c.verifier)
		for _, inv := range invisibleRunes {
			for _, fill := range []string{inv, " " + inv + " ", inv + inv, "\u3164\u2800"} {
				pred := c.good(fill)
				r := verify(t, c.verifier, pred, "", c.params)
				assert.Zero(t, r.Score, "%s: %q", c.verifier, pred)
				paper := verifiers.Params{"visible": false}
				for k, v := range c.params {
					paper[k] = v
				}
				r = verify(t, c.verifier, pred, "", paper)
				assert.Equal(t, 1.0, r.Score, "%s paper rule: %q", c.verifier, pred)
			}
		}
		for _, in := range insertions(c.good("x"), 16, rng) {
			assert.Equal(t, 1.0, verify(t, c.verifier, in, "", c.params).Score, "%s: %q", c.verifier, in)
		}
	}
}

// FuzzSlotRule checks the slot rule of every reference verifier on any
// response: a score in [0, 1] and no error against a valid reference; the
// same score after a zero-width character is inserted anywhere; 0 for the
// response placed only inside <think>; and 0 after a retraction appended
// behind its answer.
func FuzzSlotRule(f *testing.F) {
	for _, c := range refCases {
		for _, w := range wrappers {
			f.Add(w.f(c.right, c.wrong), uint16(7))
			f.Add(w.f(c.right+" or "+c.wrong, c.wrong), uint16(3))
		}
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, pred string, at uint16) {
		i := int(at) % (len(pred) + 1)
		for i > 0 && i < len(pred) && !utf8.RuneStart(pred[i]) {
			i--
		}
		inserted := pred[:i] + "\u200b" + pred[i:]
		for _, c := range refCases {
			res, err := verifiers.Default.Verify(ctx, c.verifier, pred, c.gold, c.params)
			if err != nil || !(res.Score >= 0 && res.Score <= 1) {
				t.Fatalf("%s(%q) = %+v, %v", c.verifier, pred, res, err)
			}
			res2, err := verifiers.Default.Verify(ctx, c.verifier, inserted, c.gold, c.params)
			if err != nil || res2.Score != res.Score {
				t.Fatalf("%s: %q scores %v (%s) but %q scores %v (%s), %v", c.verifier, pred, res.Score, res.Reason,
					inserted, res2.Score, res2.Reason, err)
			}
			if strings.Contains(pred, "think>") || strings.Contains(pred, "<|") {
				continue
			}
			think := "<think>" + pred + "</think>"
			if r, err := verifiers.Default.Verify(ctx, c.verifier, think, c.gold, c.params); err != nil || r.Score != 0 {
				t.Fatalf("%s: answer only in the reasoning %q scores %+v, %v", c.verifier, think, r, err)
			}
			if strings.Contains(pred, "answer>") || strings.Contains(pred, "```") || strings.Count(pred, "\\boxed") > 0 {
				continue
			}
			retracted := "<answer>" + pred + "</answer> Actually, that's wrong."
			if r, err := verifiers.Default.Verify(ctx, c.verifier, retracted, c.gold, c.params); err != nil || r.Score != 0 {
				t.Fatalf("%s: retracted %q scores %+v, %v", c.verifier, retracted, r, err)
			}
		}
	})
}

// TestCodeSlot: html and svg read the answer region only — code that
// appears only in the reasoning earns nothing, a retraction after the
// fence earns nothing, and invisible characters change no score.
func TestCodeSlot(t *testing.T) {
	code := "```html\n<div class=\"card\"><h1>Title</h1><p>Body</p></div>\n```"
	ref := `<div class="card"><h1>Title</h1><p>Body</p></div>`
	for _, name := range []string{"html", "svg"} {
		good := verify(t, name, "<think>draft</think><answer>"+code+"</answer>", ref, nil)
		require.Greater(t, good.Score, 0.4, "%s", name)
		for _, pred := range []string{
			"<think>" + code + "</think>",
			"<think>" + code + "</think>\nDone.",
			"<think>ok</think><answer>" + code + "\nActually, that's wrong.</answer>",
			"<think>ok</think>" + code + "\nWait, I made a mistake.",
		} {
			r := verify(t, name, pred, ref, nil)
			assert.Less(t, r.Score, 0.1, "%s(%q) = %+v", name, pred, r)
		}
		rng := rand.New(rand.NewPCG(26, 3))
		for _, in := range insertions("<think>draft</think><answer>"+code+"</answer>", 16, rng) {
			assert.Equal(t, good.Score, verify(t, name, in, ref, nil).Score, "%s(%q)", name, in)
		}
	}
}

// confirmations follow an answer without withdrawing it.
var confirmations = []string{
	"\n\nWait, let me double-check this. Yes, it holds.",
	"\nI hope this helps.",
	"\n\nThis is consistent with the figure.",
}

// TestConfirmationAfterTheAnswerPays: text after the answer that checks or
// restates it, without a retraction cue, changes no score.
func TestConfirmationAfterTheAnswerPays(t *testing.T) {
	for _, c := range refCases {
		base := verifyCase(t, c, "<think>ok</think><answer>"+c.right+"</answer>")
		for _, conf := range confirmations {
			pred := "<think>ok</think><answer>" + c.right + "</answer>" + conf
			assert.Equal(t, base.Score, verifyCase(t, c, pred).Score, "%s: %q", c.verifier, pred)
		}
	}
}

// TestDifferingFencesScoreZero: two fenced answers that differ, in either
// order, are several candidates; the same fenced answer twice is one.
func TestDifferingFencesScoreZero(t *testing.T) {
	fence := func(s string) string { return "```\n" + s + "\n```" }
	for _, c := range refCases {
		if c.verifier == "math" || c.verifier == "number" || c.verifier == "choice" {
			continue // short values: the slot rule's boxes and phrases, not fences
		}
		for _, pair := range [][2]string{{c.right, c.wrong}, {c.wrong, c.right}} {
			pred := "<think>ok</think>" + fence(pair[0]) + "\nHere it is again:\n" + fence(pair[1])
			assert.Zero(t, verifyCase(t, c, pred).Score, "%s: %q", c.verifier, pred)
		}
		pred := "<think>ok</think>" + fence(c.right) + "\nHere it is again:\n" + fence(c.right)
		assert.Greater(t, verifyCase(t, c, pred).Score, 0.5, "%s: %q", c.verifier, pred)
	}
}
