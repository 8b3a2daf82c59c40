package slot

import (
	"strings"
	"testing"
)

// FuzzFind checks the slot's invariants on any text: a span inside the
// response, non-empty trimmed values, a reason exactly when there is no
// slot, lenient mode finding a slot whenever strict mode finds none for
// lack of one, and never a slot inside the reasoning.
func FuzzFind(f *testing.F) {
	for _, s := range []string{
		"The answer is 42.", `\boxed{3} and \boxed{4}`, `\boxed{3} \boxed{4}`, "<think>x</think><answer>B</answer>",
		"<answer>", "<think>the answer is 5", "Answer:\n\n7", "#### 72", "x = 3", "Therefore, 5.", "<|im_end|>",
		`\boxed{\boxed{1}`, "the answer is $1$ or $2$", "5 is our answer.", "Option B",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lenient := range []bool{false, true} {
			sl := Find(s, lenient)
			if sl.Kind == None {
				if sl.Reason == "" {
					t.Fatalf("Find(%q, %v): no slot and no reason", s, lenient)
				}
				if lenient && sl.Reason == reasonNoSlot {
					t.Fatalf("Find(%q, lenient): %s", s, sl.Reason)
				}
				continue
			}
			if sl.Start < 0 || sl.End > len(s) || sl.Start > sl.End {
				t.Fatalf("Find(%q, %v): span [%d, %d)", s, lenient, sl.Start, sl.End)
			}
			for _, v := range sl.Values {
				if v == "" || v != strings.TrimSpace(v) {
					t.Fatalf("Find(%q, %v): value %q", s, lenient, v)
				}
			}
			if c := strings.LastIndex(s, "</think>"); c >= 0 && sl.Start < c && !strings.Contains(s[:sl.Start], "<|") {
				t.Fatalf("Find(%q, %v): slot at %d inside the reasoning that ends at %d", s, lenient, sl.Start, c)
			}
		}
	})
}
