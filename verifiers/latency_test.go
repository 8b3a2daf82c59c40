package verifiers_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
)

// TestVerifierLatency prints the median and p99 latency of one call of
// each built-in verifier on realistic responses (about 1.5 KB of
// reasoning, then the answer), for BENCHMARKS.md. It runs only with
// RLPOST_LATENCY=1:
//
//	RLPOST_LATENCY=1 go test ./verifiers -run TestVerifierLatency -v
func TestVerifierLatency(t *testing.T) {
	if os.Getenv("RLPOST_LATENCY") == "" {
		t.Skip("set RLPOST_LATENCY=1 to measure")
	}
	think := "<think>" + strings.Repeat("The image shows several objects; I consider each region in turn and compare. ", 20) + "</think>\n"
	cases := []struct{ name, pred, ref string }{
		{"math", think + `The answer is $\frac{3}{4}$.`, `\frac{3}{4}`},
		{"choice", think + "<answer>B</answer>", "B"},
		{"number", think + "<answer>There are 1,024 objects.</answer>", "1024"},
		{"iou", think + "<answer>[10, 12, 108, 110]</answer>", "[10, 10, 110, 110]"},
		{"detection", think + "<answer>```json\n[{\"bbox_2d\": [10, 12, 108, 110], \"label\": \"cat\"}, {\"bbox_2d\": [200, 50, 300, 150], \"label\": \"dog\"}]\n```</answer>",
			`[{"label": "cat", "bbox": [10, 10, 110, 110]}, {"label": "dog", "bbox": [200, 50, 300, 150]}]`},
		{"temporal_iou", think + "<answer>[2.5, 7.0]</answer>", "[3.0, 7.0]"},
		{"ocr", think + "<answer>Total amount due: 1,234.50 USD</answer>", "Total amount due: 1,234.56 USD"},
		{"answer", think + "<answer>Paris</answer>", "Paris"},
		{"structured_f1", think + `<answer>{"player": "row 2 col 1", "box0": ["above player", "left of target0"]}</answer>`,
			`{"player": "row 2 col 1", "box0": ["left of target0", "above player"]}`},
		{"html", think + "<answer>```html\n<div class=\"card\"><h1>Title</h1><p>Body text here</p></div>\n```</answer>", `<div class="card"><h2>Title</h2><p>Body text</p></div>`},
		{"format", think + "<answer>B</answer>", ""},
		{"format_tags", think + "<answer>B</answer>", ""},
		{"think_boxed_format", think + `So the answer is \boxed{42}.`, ""},
		{"vagen_format", "<think><observation>a box at row 2</observation><reasoning>" + strings.Repeat("push it left. ", 40) +
			"</reasoning><prediction>the box moves</prediction></think><answer>Left</answer>", ""},
	}
	ctx := context.Background()
	const n = 3000
	for _, c := range cases {
		v, err := verifiers.New(c.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]time.Duration, n)
		for i := range d {
			s := time.Now()
			if _, err := v.Verify(ctx, c.pred, c.ref); err != nil {
				t.Fatal(err)
			}
			d[i] = time.Since(s)
		}
		slices.Sort(d)
		fmt.Printf("| %s | %d | %.1f | %.1f |\n", c.name, len(c.pred), float64(d[n/2].Nanoseconds())/1e3, float64(d[n*99/100].Nanoseconds())/1e3)
	}
}
