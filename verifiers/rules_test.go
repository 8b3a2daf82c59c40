package verifiers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnswerTag(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"<answer>B</answer>", "B", true},
		{"<answer>A</answer> then <answer> C </answer>", " C ", true},
		{"<think>x</think><answer>42", "", false}, // truncated: not closed
		{"<answer>1</answer><answer>2", "1", true},
		{"no tags", "", false},
		{"</answer><answer>", "", false},
	} {
		got, ok := verifiers.AnswerTag(c.in)
		assert.Equal(t, c.want, got, "AnswerTag(%q)", c.in)
		assert.Equal(t, c.ok, ok, "AnswerTag(%q)", c.in)
	}
}

func TestLastBoxed(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`\boxed{42}`, "42", true},
		{`a \boxed{1} b \boxed{\frac{1}{2}}`, `\frac{1}{2}`, true},
		{`\boxed{\boxed{1}}`, "1", true},
		{`\boxed{\{1,2\}}`, `\{1,2\}`, true}, // escaped braces are text
		{`\boxed{1} \boxed{2`, "1", true},    // unbalanced last: the earlier one
		{`\boxed{a}}}}`, "a", true},
		{`\\boxed{3}`, "", false}, // a line break, then the word "boxed"
		{`\boxed 5`, "", false},
		{"", "", false},
	} {
		got, ok := verifiers.LastBoxed(c.in)
		assert.Equal(t, c.want, got, "LastBoxed(%q)", c.in)
		assert.Equal(t, c.ok, ok, "LastBoxed(%q)", c.in)
	}
}

func TestExtract(t *testing.T) {
	resp := "<think>maybe \\boxed{1}</think><answer>so \\boxed{2}</answer>"
	for _, c := range []struct {
		in, mode, want string
		ok             bool
	}{
		{resp, "auto", "2", true},
		{resp, "answer", `so \boxed{2}`, true},
		{resp, "boxed", "2", true},
		{"<think>x</think> \\boxed{7} ", "auto", "7", true},
		{"  plain  ", "auto", "plain", true},
		{"plain", "answer", "", false},
		{"plain", "boxed", "", false},
		{"plain", "none", "plain", true},
		{"<answer>```html\n<p>x</p>\n```</answer>", "code", "<p>x</p>", true},
		{"x", "bogus", "", false},
	} {
		got, ok := verifiers.Extract(c.in, c.mode)
		assert.Equal(t, c.want, got, "Extract(%q, %s)", c.in, c.mode)
		assert.Equal(t, c.ok, ok, "Extract(%q, %s)", c.in, c.mode)
	}
}

func TestChoice(t *testing.T) {
	for _, c := range []struct {
		pred, ref string
		score     float64
		parsed    string
	}{
		{"<answer>B</answer>", "B", 1, "B"},
		{"<answer>b) a cat</answer>", "B", 1, "B"},
		{"<answer>(C)</answer>", "(c)", 1, "C"},
		{"<think>A is wrong</think><answer>D.</answer>", "B", 0, "D"},
		{`<answer>\boxed{A}</answer>`, "A", 1, "A"},
		{"<answer>42</answer>", "A", 0, ""},  // no letter
		{"The answer is B", "B", 1, "B"},     // the answer phrase is the slot
		{"A cat sat on the mat", "A", 0, ""}, // no slot: prose, not an option
		{"<answer>é</answer>", "É", 1, "É"},
	} {
		res := verify(t, "choice", c.pred, c.ref, nil)
		if res.Score != c.score || res.Correct != (c.score == 1) || res.Parsed != c.parsed {
			t.Errorf("choice(%q, %q) = %+v, want score %v parsed %q", c.pred, c.ref, res, c.score, c.parsed)
		}
	}
	_, err := verifiers.Default.Verify(context.Background(), "choice", "A", "123", nil)
	assert.ErrorIs(t, err, verifiers.ErrSyntax, "choice with a letterless ref: %v, want ErrSyntax", err)
}

func TestLastNumber(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"there are 3 cats and 12 dogs", "12", true},
		{"1,024 objects", "1024", true},
		{"1,2,3", "3", true},
		{"12,34", "34", true},
		{"x = -4", "-4", true},
		{"3-4", "4", true},
		{"(-0.50)", "-0.5", true},
		{"-0", "0", true},
		{"007", "7", true},
		{".5", "0.5", true},
		{"1e5", "5", true},
		{"+3", "3", true},
		{"v1.2.3", "0.3", true},
		{"none", "", false},
	} {
		got, ok := verifiers.LastNumber(c.in)
		assert.Equal(t, c.want, got, "LastNumber(%q)", c.in)
		assert.Equal(t, c.ok, ok, "LastNumber(%q)", c.in)
	}
}

func TestNumber(t *testing.T) {
	huge := strings.Repeat("9", 4000)
	for _, c := range []struct {
		pred, ref string
		p         verifiers.Params
		score     float64
	}{
		{"<answer>There are 7 apples</answer>", "7", nil, 1},
		{"<answer>7.0</answer>", "7", nil, 1},
		{"<answer>1,024</answer>", "1024", nil, 1},
		{"<answer>8</answer>", "7", nil, 0},
		{"<answer>3.14159</answer>", "3.1416", nil, 0},
		{"<answer>3.14159</answer>", "3.1416", verifiers.Params{"tol": 1e-4}, 1},
		{"<answer>none</answer>", "7", nil, 0},
		{"<answer>" + huge + "</answer>", huge, nil, 1},
		{"<answer>" + huge + "8</answer>", huge + "9", verifiers.Params{"tol": 0.5}, 0}, // beyond float64: exact
		{"<answer>" + huge + huge + "</answer>", "9", nil, 0},                           // over MaxNumberDigits: a limit hit
	} {
		res := verify(t, "number", c.pred, c.ref, c.p)
		if res.Score != c.score || res.Correct != (c.score == 1) {
			t.Errorf("number(%.40q, %.40q, %v) = %+v, want %v", c.pred, c.ref, c.p, res, c.score)
		}
	}
	_, err := verifiers.Default.Verify(context.Background(), "number", "1", "n/a", nil)
	assert.ErrorIs(t, err, verifiers.ErrSyntax, "number with a ref without a number")
	_, err = verifiers.Default.Verify(context.Background(), "number", "1", "1", verifiers.Params{"tol": -1})
	assert.ErrorIs(t, err, verifiers.ErrParam, "number with tol −1")
}

func TestAnswerVerifier(t *testing.T) {
	if r := verify(t, "answer", "<answer> Paris </answer>", "Paris", nil); r.Score != 1 {
		t.Errorf("answer exact: %+v", r)
	}
	if r := verify(t, "answer", "<answer>paris</answer>", "Paris", nil); r.Score != 0 {
		t.Errorf("answer is case-sensitive by default: %+v", r)
	}
	if r := verify(t, "answer", "<answer>paris</answer>", "Paris", verifiers.Params{"ignore_case": true}); r.Score != 1 {
		t.Errorf("answer ignore_case: %+v", r)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		in   string
		avat bool
		tags float64
	}{
		{"<think>a</think><answer>b</answer>", true, 1},
		{"  <think>a</think>\n<answer>b</answer>\n", true, 1},
		{"<think>a</think> x <answer>b</answer>", false, 1},
		{"<answer>b</answer><think>a</think>", false, 1},
		{"<think>a</think><answer>b</answer> tail", false, 1},
		{"<think>a<think></think><answer>b</answer>", false, 0.75},
		{"<think>a</think>", false, 0.5},
		{"<answer>b</answer><answer>c</answer>", false, 0},
		{"", false, 0},
		{"<think></think><answer></answer>", true, 1},
	} {
		if got := verifiers.ThinkAnswer(c.in); got != c.avat {
			t.Errorf("ThinkAnswer(%q) = %v, want %v", c.in, got, c.avat)
		}
		if got := verifiers.FormatTags(c.in); got != c.tags {
			t.Errorf("FormatTags(%q) = %v, want %v", c.in, got, c.tags)
		}
		// The papers' rules ("visible": false) are the exported functions.
		paper := verifiers.Params{"visible": false}
		r := verify(t, "format", c.in, "", paper)
		assert.Equal(t, c.avat, r.Correct, "format(%q) = %+v", c.in, r)
		assert.Equal(t, map[bool]float64{true: 1}[c.avat], r.Score, "format(%q) = %+v", c.in, r)
		r = verify(t, "format_tags", c.in, "", paper)
		if r.Score != c.tags || r.Correct != (c.tags == 1) {
			t.Errorf("format_tags(%q) = %+v", c.in, r)
		}
	}
	// By default a section counts only with visible content.
	for in, want := range map[string][2]float64{
		"<think></think><answer></answer>":                 {0, 0},
		"<think>a</think><answer>\u200b</answer>":          {0, 0.5},
		"<think>a</think><answer>b":                        {0, 0.75},
		"<think>a<think></think><answer>b</answer>":        {0, 0.5},
		"<think>a</think>\n<answer>b</answer>":             {1, 1},
		"<thi\u200bnk>a</think>\n<answer>\u3164b</answer>": {1, 1},
	} {
		assert.Equal(t, want[0], verify(t, "format", in, "", nil).Score, "format(%q)", in)
		assert.Equal(t, want[1], verify(t, "format_tags", in, "", nil).Score, "format_tags(%q)", in)
	}
}

func TestOCR(t *testing.T) {
	for _, c := range []struct {
		pred, ref string
		p         verifiers.Params
		score     float64
	}{
		{"<answer>hello</answer>", "hello", nil, 1},
		{"<answer>hallo</answer>", "hello", nil, 0.8},
		// Characters, not bytes: é is two bytes but one edit.
		{"<answer>cafe</answer>", "café", nil, 0.75},
		{"<answer>北京大字</answer>", "北京大学", nil, 0.75},
		{"<answer>ab</answer>", "ax", nil, 0.5}, // exactly 0.5 is kept
		{"<answer>abc</answer>", "xyc", nil, 0}, // 1/3 < 0.5
		{"<answer>abcd</answer>", "wxyz", nil, 0},
		{"<answer>hallo</answer>", `["hello", "hallo"]`, nil, 1},
		{"<answer>HELLO</answer>", "hello", nil, 0},
		{"<answer>HELLO</answer>", "hello", verifiers.Params{"ignore_case": true}, 1},
		{"<answer></answer>", "", nil, 1},
		{"<answer>x</answer>", "", nil, 0},
		{"<answer>" + strings.Repeat("a", 100000) + "</answer>", "a", nil, 0}, // length bound, no table
	} {
		res := verify(t, "ocr", c.pred, c.ref, c.p)
		if !near(res.Score, c.score) || res.Correct != (c.score == 1) {
			t.Errorf("ocr(%.40q, %q) = %+v, want %v", c.pred, c.ref, res, c.score)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2},
		{"café", "cafe", 1}, {"日本語", "日本", 1}, {"\xff\xfe", "\xff", 1}, {"abcdef", "azcdxf", 2},
	} {
		for _, swap := range []bool{false, true} {
			a, b := c.a, c.b
			if swap {
				a, b = b, a
			}
			d, err := verifiers.EditDistance(a, b)
			require.NoError(t, err, "EditDistance(%q, %q)", a, b)
			assert.Equal(t, c.d, d, "EditDistance(%q, %q)", a, b)
		}
	}
	big := strings.Repeat("ab", 2500)
	_, err := verifiers.EditDistance(big, strings.Repeat("ba", 2500))
	assert.ErrorIs(t, err, verifiers.ErrTooLarge, "EditDistance over MaxEditCells")
	// Identical long strings need no table.
	d, err := verifiers.EditDistance(big, big)
	require.NoError(t, err, "EditDistance(big, big)")
	assert.Equal(t, 0, d, "EditDistance(big, big)")
}

func TestHTML(t *testing.T) {
	ref := `<div class="box"><p>Hello world</p></div>`
	for _, c := range []struct {
		pred  string
		score float64
	}{
		{ref, 1},
		// tokens {div class box p Hello world} vs {div class box span Hello world}:
		// 5/7; tags {div p} vs {div span}: 1/3.
		{`<div class="box"><span>Hello world</span></div>`, 0.6*5/7 + 0.4/3},
		{"<answer>```html\n" + ref + "\n```</answer>", 1},
		{"no markup at all", 0},
	} {
		res := verify(t, "html", c.pred, ref, nil)
		if !near(res.Score, c.score) || res.Correct != (c.score == 1) {
			t.Errorf("html(%q) = %+v, want %v", c.pred, res, c.score)
		}
	}
	if r := verify(t, "html", `<div class="box"><span>Hello world</span></div>`, ref, verifiers.Params{"pass": 0.5}); !r.Correct {
		t.Errorf("html with pass 0.5: %+v", r)
	}
	tags := verifiers.Tags(`<DIV><svg:rect/></my-widget> < p> <3 <br/>`)
	for _, want := range []string{"div", "svg:rect", "my-widget", "br"} {
		if _, ok := tags[want]; !ok {
			t.Errorf("Tags misses %q: %v", want, tags)
		}
	}
	assert.Len(t, tags, 4, "Tags: want 4 names")
}
