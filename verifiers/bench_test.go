package verifiers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
)

// BenchmarkVerifiers measures one call of each built-in verifier on a
// typical response: a few hundred bytes of reasoning, then the answer.
func BenchmarkVerifiers(b *testing.B) {
	think := "<think>" + strings.Repeat("The image shows several objects; consider each region in turn. ", 5) + "</think>"
	cases := []struct{ name, pred, ref string }{
		{"choice", think + "<answer>B</answer>", "B"},
		{"number", think + "<answer>There are 1,024 objects</answer>", "1024"},
		{"iou", think + "<answer>[10, 12, 108, 110]</answer>", "[10, 10, 110, 110]"},
		{"detection", think + `<answer>[{"bbox_2d": [10, 12, 108, 110], "label": "cat"}, {"bbox_2d": [200, 50, 300, 150], "label": "dog"}]</answer>`,
			`[{"label": "cat", "bbox": [10, 10, 110, 110]}, {"label": "dog", "bbox": [200, 50, 300, 150]}]`},
		{"ocr", think + "<answer>Total amount due: 1,234.50 USD</answer>", "Total amount due: 1,234.56 USD"},
		{"html", think + "<answer>```html\n<div class=\"card\"><h1>Title</h1><p>Body text here</p></div>\n```</answer>", `<div class="card"><h2>Title</h2><p>Body text</p></div>`},
		{"format_tags", think + "<answer>B</answer>", ""},
	}
	ctx := context.Background()
	for _, c := range cases {
		v, err := verifiers.New(c.name, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, c.pred, c.ref); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRegistryVerifyParams is the path of `rlpost verify` and `rlpost
// serve`: every sample names its verifier and parameters, which repeat
// across a batch.
func BenchmarkRegistryVerifyParams(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name, pred, ref string
		params          verifiers.Params
	}{
		{"number", "<think>6·7</think>The answer is 42.", "42", verifiers.Params{"tol": 0.01}},
		{"math", `<think>…</think>The answer is $\frac{1}{2}$.`, "0.5", verifiers.Params{"precision": 4.0, "strict": false}},
		{"detection", `<answer>[{"label": "cat", "bbox": [0, 0, 10, 10]}]</answer>`, `[{"label": "cat", "bbox": [0, 0, 10, 10]}]`, verifiers.Params{"progress": 0.3, "matching": "optimal"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := verifiers.Default.Verify(ctx, c.name, c.pred, c.ref, c.params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
