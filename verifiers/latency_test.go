package verifiers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/require"
)

// latencyCase is one realistic call: a response of reasoning and an
// answer in its slot, and the reference.
type latencyCase struct{ pred, ref string }

// realistic returns n realistic responses for the verifier name, with
// reasoning of 100 bytes to 4 KiB before the answer, or nil for a
// verifier it has no responses for.
func realistic(name string, n int) []latencyCase {
	r := rand.New(rand.NewPCG(26, 6))
	sentences := []string{
		"Let me look at the problem again. ", "The image shows several objects; consider each region in turn. ",
		"We compute $3x + 5 = 20$, so $x = 5$. ", "By the Pythagorean theorem, $c = \\sqrt{9 + 16} = 5$. ",
		"The second option contradicts the caption, so it is out. ", "Counting row by row gives 4, 8 and 12. ",
		"\n\n", "So the probability is $\\frac{3}{8}$ because 3 of the 8 outcomes qualify. ",
	}
	think := func() string {
		size := 100 + r.IntN(4000)
		var sb strings.Builder
		sb.WriteString("<think>")
		for sb.Len() < size {
			sb.WriteString(sentences[r.IntN(len(sentences))])
		}
		sb.WriteString("</think>\n")
		return sb.String()
	}
	out := make([]latencyCase, n)
	for i := range out {
		k, a, b := r.IntN(1000), r.IntN(100), r.IntN(100)
		var c latencyCase
		switch name {
		case "answer":
			c = latencyCase{think() + fmt.Sprintf("<answer>%d</answer>", k), fmt.Sprint(k)}
		case "math":
			pred := [...]string{
				fmt.Sprintf(`The answer is $\boxed{\frac{%d}{%d}}$.`, k, a+2),
				fmt.Sprintf("Final Answer: The final answer is $%d$. I hope it is correct.", k),
				fmt.Sprintf(`Hence $\boxed{(x+%d)^2}$.`, a),
			}
			ref := [...]string{fmt.Sprintf(`\frac{%d}{%d}`, k, a+2), fmt.Sprint(k), fmt.Sprintf("x^2+%dx+%d", 2*a, a*a)}
			j := r.IntN(3)
			c = latencyCase{strings.TrimPrefix(think(), "<think>") + pred[j], ref[j]}
		case "choice":
			c = latencyCase{think() + "<answer>" + string(rune('A'+a%4)) + "</answer>", string(rune('A' + a%4))}
		case "number":
			c = latencyCase{think() + fmt.Sprintf("<answer>There are %d objects</answer>", k), fmt.Sprint(k)}
		case "iou":
			c = latencyCase{think() + fmt.Sprintf("<answer>[%d, %d, %d, %d]</answer>", a, b, a+50, b+60), fmt.Sprintf("[%d, %d, %d, %d]", a+2, b, a+52, b+58)}
		case "detection":
			c = latencyCase{think() + fmt.Sprintf(`<answer>[{"bbox_2d": [%d, %d, %d, %d], "label": "cat"}, {"bbox_2d": [200, 50, 300, 150], "label": "dog"}]</answer>`, a, b, a+90, b+95),
				fmt.Sprintf(`[{"label": "cat", "bbox": [%d, %d, %d, %d]}, {"label": "dog", "bbox": [200, 50, 300, 150]}]`, a, b, a+100, b+100)}
		case "ocr":
			c = latencyCase{think() + fmt.Sprintf("<answer>Total amount due: %d.50 USD</answer>", k), fmt.Sprintf("Total amount due: %d.56 USD", k)}
		case "html":
			c = latencyCase{think() + "<answer>```html\n<div class=\"card\"><h1>Title</h1><p>Body text here</p></div>\n```</answer>", `<div class="card"><h2>Title</h2><p>Body text</p></div>`}
		case "svg":
			c = latencyCase{think() + fmt.Sprintf(`<answer><svg><rect x="%d" y="%d" width="10" height="10"/></svg></answer>`, a, b), `<svg><rect x="0" y="0" width="10" height="10"/></svg>`}
		case "format", "format_tags", "think_boxed_format":
			c = latencyCase{think() + pick3(r, "<answer>B</answer>", fmt.Sprintf(`The answer is $\boxed{%d}$.`, k), "<answer>42</answer>"), ""}
		case "vagen_format":
			obs := strings.TrimSuffix(strings.TrimPrefix(think(), "<think>"), "</think>\n")
			c = latencyCase{fmt.Sprintf("<think><observation>%s</observation><reasoning>%s</reasoning><prediction>box left</prediction></think><answer>Left</answer>",
				obs, sentences[a%len(sentences)]), ""}
		case "temporal_iou":
			c = latencyCase{think() + fmt.Sprintf("<answer>[%d.5, %d.0]</answer>", a%10, a%10+5), fmt.Sprintf("[%d.0, %d.0]", a%10, a%10+5)}
		case "structured_f1":
			c = latencyCase{think() + fmt.Sprintf(`<answer>{"name": "item %d", "tags": ["a", "b"], "size": {"w": %d, "h": %d}}</answer>`, k, a, b),
				fmt.Sprintf(`{"name": "item %d", "tags": ["a", "c"], "size": {"w": %d, "h": %d}}`, k, a, b)}
		default:
			return nil
		}
		out[i] = c
	}
	return out
}

func pick3(r *rand.Rand, a, b, c string) string { return [...]string{a, b, c}[r.IntN(3)] }

// TestVerifierLatency prints the median and 99th-percentile latency of
// every registered verifier on 300 realistic responses (reasoning of 100 B
// to 4 KiB, then the answer), each call the least of 3 runs. It only
// reports (RLPOST_LATENCY=1), since a loaded machine is no measurement:
//
//	RLPOST_LATENCY=1 go test ./verifiers -run TestVerifierLatency -v
func TestVerifierLatency(t *testing.T) {
	if os.Getenv("RLPOST_LATENCY") != "1" {
		t.Skip("set RLPOST_LATENCY=1 to measure")
	}
	ctx := context.Background()
	for _, name := range verifiers.Names() {
		cases := realistic(name, 300)
		if cases == nil {
			t.Logf("%-20s no realistic responses in this harness", name)
			continue
		}
		v, err := verifiers.New(name, nil)
		require.NoError(t, err, name)
		per := make([]time.Duration, len(cases))
		paid := 0
		for i, c := range cases {
			best := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				res, err := v.Verify(ctx, c.pred, c.ref)
				best = min(best, time.Since(start))
				require.NoError(t, err, "%s: %q", name, c.pred)
				if res.Score > 0 {
					paid++
				}
			}
			per[i] = best
		}
		slices.Sort(per)
		t.Logf("%-20s median %9v  p99 %9v  max %9v  (score > 0 on %d/%d)", name, per[len(per)/2], per[len(per)*99/100], per[len(per)-1], paid/3, len(cases))
	}
}
