package mathverify

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
	"testing"
	"time"
)

// fuzzSeeds are answers of every form the package knows, plus broken ones.
var fuzzSeeds = []string{
	"42", "-7", "1,000,000", "12{,}345", "0.\\overline{3}", "1.5e3", "3,5", ".4",
	"\\frac{3}{4}", "\\frac13", "\\sqrt[3]{27}", "2^{10}", "e^{i\\pi}", "x^2-5x+6",
	"\\sin^2 x + \\cos^2 x", "\\log_2 8", "5!", "\\binom{5}{2}", "50\\%", "90^\\circ",
	"1+2i", "x = 3", "y = 2x+1", "x > 3", "-1 < x \\le 2", "(1, 2]", "[0, 1) \\cup [1, 2]",
	"\\{1, 2, 3\\}", "1 \\pm \\sqrt{2}", "(1, 2), (3, 4)", "\\begin{pmatrix}1 & 2\\\\3 & 4\\end{pmatrix}",
	"\\text{(C)}", "204_5", "$\\boxed{5}$", "<answer>7</answer>", "The final answer is $7$. I hope it is correct.",
	"\\boxed{1} and \\boxed{2}", "x \\in [-2, 7]", "\\sum_{k=0}^{n-1} F_k F_{n-k-1}", "12:00", "f(x) = 1",
	"$$\\left( \\frac{1}{5}, \\frac{1}{6} \\right)$$", "|x-3|", "\\lfloor 2.5 \\rfloor", "\\mathbb{R}",
	"\\frac{", "}}}", "\\boxed{", "$", "\\\\left(", "((((", "^^^", "1/0", "0^0", "\\sqrt{-1}", "",
}

func FuzzVerify(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, fuzzSeeds[(i*7+3)%len(fuzzSeeds)])
		f.Add(s, s)
	}
	o := DefaultOptions()
	o.Timeout = 2 * time.Second
	f.Fuzz(func(t *testing.T, gold, pred string) {
		defer slow(t, 4*time.Second, gold, pred)()
		res, err := Verify(context.Background(), gold, pred, o)
		if errors.Is(err, ErrInternal) {
			t.Fatalf("Verify(%q, %q): %v", gold, pred, err)
		}
		if err != nil {
			return // empty gold, or the time budget on pathological input
		}
		if res.Correct != (res.Score == 1) || res.Score != 0 && res.Score != 1 {
			t.Fatalf("Verify(%q, %q) = %+v", gold, pred, res)
		}
	})
}

// slow fails the fuzz iteration if it outlives its time budget by far:
// work the budget does not bound is a bug.
func slow(t *testing.T, limit time.Duration, in ...string) func() {
	start := time.Now()
	return func() {
		if el := time.Since(start); el > limit {
			t.Fatalf("took %v on %q", el, in)
		}
	}
}

// FuzzParse checks the parser alone: any text parses or fails cleanly, and
// a parsed tree renders, evaluates and compares with itself without
// trouble.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	o := DefaultOptions()
	f.Fuzz(func(t *testing.T, s string, plain bool) {
		if len(s) > 4096 {
			return
		}
		defer slow(t, 3*time.Second, s)()
		bud := newBudget(context.Background(), time.Second)
		n, err := parseAnswer(s, plain, o.MaxDepth, bud)
		if err != nil {
			if n != nil {
				t.Fatalf("parseAnswer(%q) returned a tree and %v", s, err)
			}
			return
		}
		_ = n.String()
		c := &comparer{o: &o, ev: &evaluator{o: &o, bud: bud}, bud: bud}
		x := expandPM(n)
		c.equal(x, x)
		c.ev.exact(n)
		c.ev.eval(n, nil)
	})
}

// FuzzExtract checks extraction on arbitrary responses under each target
// set.
func FuzzExtract(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(3), int8(0))
	}
	f.Fuzz(func(t *testing.T, s string, match uint8, boxed int8) {
		o := DefaultOptions()
		o.Match = MatchType(match%7) + 1
		o.BoxedPriority = int(boxed)%1001 - 1
		if o.BoxedPriority < -1 {
			o.BoxedPriority = -1
		}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		defer slow(t, 3*time.Second, s)()
		a, _ := extract(s, &o, match&8 != 0, slot.None, newBudget(context.Background(), time.Second))
		if a.node != nil {
			_ = a.node.String()
		}
	})
}

// FuzzParseOptions decodes arbitrary JSON params.
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{`{}`, `{"precision": 3}`, `{"match_types": ["latex", "choice"], "choices": "AB"}`,
		`{"timeout_ms": 1e308}`, `{"strict": null}`, `{"max_depth": 1e20}`, `{"boxed_priority": -1.5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var params map[string]any
		if json.Unmarshal(data, &params) != nil {
			return
		}
		o, err := ParseOptions(params)
		if err == nil {
			if verr := o.Validate(); verr != nil {
				t.Fatalf("ParseOptions(%s) accepted invalid options: %v", data, verr)
			}
		}
	})
}
