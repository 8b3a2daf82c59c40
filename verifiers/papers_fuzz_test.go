package verifiers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
)

// fuzzLimit bounds the fuzzed inputs of the paper verifiers: large enough
// for many tags and numbers, small enough that every run stays fast.
const fuzzLimit = 1 << 14

// checkFuzzResult checks what every verifier promises on any prediction:
// no error for a good reference, a score in [0, 1], and an answer within a
// generous time even on a loaded machine.
func checkFuzzResult(t *testing.T, name, pred, ref string, p verifiers.Params) verifiers.Result {
	t.Helper()
	start := time.Now()
	res, err := verifiers.Default.Verify(context.Background(), name, pred, ref, p)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%s took %v on %d bytes", name, d, len(pred))
	}
	if err != nil {
		t.Fatalf("%s(%q): %v", name, pred, err)
	}
	if !(res.Score >= 0 && res.Score <= 1) {
		t.Fatalf("%s(%q): score %v", name, pred, res.Score)
	}
	return res
}

func FuzzTemporalIoU(f *testing.F) {
	for _, s := range []string{"<answer>[2.5, 7.0]</answer>", "(1s - 2s)", "from 3 to 9", "[-1, 2]", "[1e999, 2]", "[[[[", "1.2.3 4", "[3 to 7]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pred string) {
		if len(pred) > fuzzLimit {
			return
		}
		res := checkFuzzResult(t, "temporal_iou", pred, "[3, 7]", nil)
		iv, ok := verifiers.ParseInterval(pred)
		if ok && !(iv.Start >= 0 && iv.End >= iv.Start) {
			t.Fatalf("ParseInterval(%q) = %v, not a valid interval", pred, iv)
		}
		if res.Score > 0 && res.Parsed == "" {
			t.Fatalf("a score without a parsed interval: %+v", res)
		}
	})
}

func FuzzThinkBoxedFormat(f *testing.F) {
	for _, s := range []string{`<think>a</think>\boxed{1}`, `\boxed{\boxed{`, `<think></think>\boxed{}`, `\boxed{\}`, "<think><think>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pred string) {
		if len(pred) > fuzzLimit {
			return
		}
		// The write-up's exact rule; the visible-content default is
		// stricter (TestFormatSectionsNeedVisibleContent).
		res := checkFuzzResult(t, "think_boxed_format", pred, "", verifiers.Params{"visible": false})
		if strict := checkFuzzResult(t, "think_boxed_format", pred, "", nil); strict.Correct && !res.Correct && !strings.ContainsFunc(pred, func(r rune) bool { return r > 0x7f }) {
			t.Fatalf("visible rule accepts %q, the write-up's refuses", pred)
		}
		if res.Correct && (strings.Count(pred, "<think>") != 1 || !strings.Contains(pred, `\boxed{`)) {
			t.Fatalf("accepted %q", pred)
		}
		if ok, share := verifiers.ThinkBoxed(pred, 0.2); ok != res.Correct || share < 0 || share > 1 {
			t.Fatalf("ThinkBoxed(%q) = %v, %v; verifier %+v", pred, ok, share, res)
		}
	})
}

func FuzzVAGENFormat(f *testing.F) {
	f.Add("<think><observation>a</observation><reasoning>b</reasoning><prediction>c</prediction></think><answer>d</answer>", uint8(4))
	f.Add("<answer>x</answer>", uint8(0))
	f.Add("<think><think></think></think><answer></answer>", uint8(1))
	styles := verifiers.VAGENStyles()
	f.Fuzz(func(t *testing.T, pred string, k uint8) {
		if len(pred) > fuzzLimit {
			return
		}
		style := styles[int(k)%len(styles)]
		res := checkFuzzResult(t, "vagen_format", pred, "", verifiers.Params{"style": style, "visible": false})
		if strict := checkFuzzResult(t, "vagen_format", pred, "", verifiers.Params{"style": style}); strict.Correct && !res.Correct && !strings.ContainsFunc(pred, func(r rune) bool { return r > 0x7f }) {
			t.Fatalf("visible rule accepts %q, the paper's refuses", pred)
		}
		if res.Correct && (!strings.HasSuffix(strings.TrimSpace(pred), "</answer>") || strings.Count(pred, "<answer>") != 1) {
			t.Fatalf("style %s accepted %q", style, pred)
		}
		// grounding_worldmodeling is the strictest: what it accepts has
		// every section, so no other style accepts it.
		if style == verifiers.VAGENGroundingWorldModeling && res.Correct {
			for _, other := range styles[:len(styles)-1] {
				if ok, _ := verifiers.VAGENFormat(pred, other); ok {
					t.Fatalf("%q passes both %s and %s", pred, style, other)
				}
			}
		}
	})
}

func FuzzStructuredF1(f *testing.F) {
	for _, s := range []string{`{"a": "b"}`, `{"a": ["b", "c"], "d": {"e": 1}}`, `{"a": [[1, 2], {"x": null}]}`, `{"a":` + strings.Repeat("[", 30), "[]", `{"a": 1e999}`} {
		f.Add(s)
	}
	const gold = `{"a": ["b", "c"], "d": {"e": 1}}`
	f.Fuzz(func(t *testing.T, pred string) {
		if len(pred) > fuzzLimit {
			return
		}
		checkFuzzResult(t, "structured_f1", pred, gold, nil)
		facts, err := verifiers.StructuredFacts(pred)
		if err != nil {
			return
		}
		if len(facts) > verifiers.MaxStructuredFacts {
			t.Fatalf("%d facts over the limit", len(facts))
		}
		// A dictionary agrees with itself.
		if len(strings.TrimSpace(pred)) == len(pred) {
			if res := checkFuzzResult(t, "structured_f1", pred, pred, nil); res.Score != 1 {
				t.Fatalf("structured_f1(%q, itself) = %+v", pred, res)
			}
		}
	})
}
