package verifiers_test

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rlpost/rlpost/verifiers"
)

var fuzzSeeds = []string{
	"",
	"<think>a</think><answer>B</answer>",
	`<answer>\boxed{\frac{1}{2}}</answer>`,
	`\boxed{\boxed{1}} \{ \} \\ }{`,
	"<answer>[1, 2, 3.5, 4e1]</answer>",
	`<answer>[{"label": "cat", "bbox_2d": [0,0,10,10]}]</answer>`,
	"```json\n{\"label\":\"a\",\"bbox\":[1,2,3,4]}\n```",
	"1,024.50 and -3 and .5",
	"café 北京 \xff\xfe",
	"<div class='x'><p>hi</p></div>",
	"[[[[[[[[",
	"<answer><answer></answer></answer>",
}

func FuzzAnswerTag(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := verifiers.AnswerTag(s)
		if ok != strings.Contains(s, "<answer>"+got+"</answer>") || ok && strings.Contains(got, "<answer>") {
			t.Errorf("AnswerTag(%q) = %q, %v", s, got, ok)
		}
	})
}

func FuzzLastBoxed(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := verifiers.LastBoxed(s)
		if !ok {
			if got != "" {
				t.Errorf("LastBoxed(%q) = %q without ok", s, got)
			}
			return
		}
		if !strings.Contains(s, `\boxed{`+got+"}") {
			t.Fatalf("LastBoxed(%q) = %q, not a \\boxed{} of the input", s, got)
		}
		// The content's unescaped braces balance.
		depth, low := 0, 0
		for i := 0; i < len(got); i++ {
			switch got[i] {
			case '\\':
				i++
			case '{':
				depth++
			case '}':
				depth--
				low = min(low, depth)
			}
		}
		if depth != 0 || low < 0 {
			t.Errorf("LastBoxed(%q) = %q, braces do not balance", s, got)
		}
	})
}

func FuzzExtract(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "auto")
	}
	f.Add("x", "code")
	f.Fuzz(func(t *testing.T, s, mode string) {
		got, ok := verifiers.Extract(s, mode)
		if !ok && got != "" || got != strings.TrimSpace(got) || len(got) > len(s) {
			t.Errorf("Extract(%q, %q) = %q, %v", s, mode, got, ok)
		}
	})
}

func FuzzLastNumber(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := verifiers.LastNumber(s)
		if !ok {
			return
		}
		// Canonical: parses as a decimal, is its own last number, has no
		// leading zeros, no trailing fractional zeros, no "-0".
		if _, err := strconv.ParseFloat(got, 64); err != nil && !strings.Contains(err.Error(), "range") {
			t.Fatalf("LastNumber(%q) = %q, not a number: %v", s, got, err)
		}
		if again, _ := verifiers.LastNumber(got); again != got {
			t.Errorf("LastNumber(%q) = %q, but LastNumber(%q) = %q", s, got, got, again)
		}
		digits := strings.TrimPrefix(got, "-")
		if len(digits) > 1 && digits[0] == '0' && digits[1] != '.' || strings.Contains(got, ".") && strings.HasSuffix(got, "0") || got == "-0" {
			t.Errorf("LastNumber(%q) = %q, not canonical", s, got)
		}
	})
}

func FuzzParseBox(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, ok := verifiers.ParseBox(s)
		if !ok {
			return
		}
		if again, ok := verifiers.ParseBox(b.String()); !ok || again != b {
			t.Errorf("ParseBox(%q) = %v, which does not round-trip (%v, %v)", s, b, again, ok)
		}
		if iou := verifiers.IoU(b, b); !(iou == 0 || iou == 1) {
			t.Errorf("IoU(%v, itself) = %v", b, iou)
		}
	})
}

func FuzzParseDetections(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := verifiers.ParseDetections(s)
		if err != nil {
			return
		}
		if len(ds) > verifiers.MaxBoxes {
			t.Fatalf("%d boxes past the limit", len(ds))
		}
		for _, d := range ds {
			if d.Label == "" || d.Label != strings.TrimSpace(d.Label) {
				t.Errorf("label %q", d.Label)
			}
		}
		// Scoring a parse against itself (when it is valid ground truth) is perfect.
		for _, d := range ds {
			if !d.Box.Valid() || d.Box.Area() <= 0 || math.IsInf(d.Box.Area(), 0) {
				return
			}
		}
		sc, err := verifiers.ScoreDetections(ds, ds, verifiers.DefaultDetectionConfig())
		if err != nil || sc.Score != 1 {
			t.Errorf("ScoreDetections(d, d) = %+v, %v", sc, err)
		}
	})
}

func FuzzEditDistance(f *testing.F) {
	f.Add("kitten", "sitting")
	f.Add("café", "cafe")
	f.Add("\xff", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		d, err := verifiers.EditDistance(a, b)
		if err != nil {
			return
		}
		la, lb := utf8.RuneCountInString(a), utf8.RuneCountInString(b)
		if d < max(la, lb)-min(la, lb) || d > max(la, lb) || (d == 0) != (string([]rune(a)) == string([]rune(b))) {
			t.Errorf("EditDistance(%q, %q) = %d", a, b, d)
		}
		if d2, _ := verifiers.EditDistance(b, a); d2 != d {
			t.Errorf("EditDistance not symmetric: %d, %d", d, d2)
		}
		sim, err := verifiers.OCRSimilarity(a, []string{b})
		if err != nil || !(sim == 0 || sim >= 0.5 && sim <= 1) {
			t.Errorf("OCRSimilarity(%q, %q) = %v, %v", a, b, sim, err)
		}
	})
}

func FuzzCodeOverlap(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "<div><p>x</p></div>")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		tok, tag := verifiers.CodeOverlap(a, b)
		if !(tok >= 0 && tok <= 1 && tag >= 0 && tag <= 1) {
			t.Errorf("CodeOverlap(%q, %q) = %v, %v", a, b, tok, tag)
		}
		if tok, tag := verifiers.CodeOverlap(a, a); tok != 1 || tag != 1 {
			t.Errorf("CodeOverlap(%q, itself) = %v, %v", a, tok, tag)
		}
	})
}

func FuzzFormat(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if verifiers.ThinkAnswer(s) && verifiers.FormatTags(s) != 1 {
			t.Errorf("ThinkAnswer(%q) but FormatTags %v", s, verifiers.FormatTags(s))
		}
		if r := verifiers.FormatTags(s); r < 0 || r > 1 {
			t.Errorf("FormatTags(%q) = %v", s, r)
		}
	})
}

func FuzzParams(f *testing.F) {
	f.Add(`{"threshold": 0.5, "matching": "optimal"}`, "threshold")
	f.Add(`{"x": [1, {"y": null}], "tol": "1"}`, "tol")
	f.Fuzz(func(t *testing.T, js, key string) {
		var p verifiers.Params
		if json.Unmarshal([]byte(js), &p) != nil {
			return
		}
		if v, err := p.Float(key, 0); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("Float(%q) = %v", key, v)
		}
		_, _ = p.Int(key, 0)
		_, _ = p.Bool(key, false)
		_, _ = p.String(key, "")
		_, _ = p.Enum(key, "a", "a", "b")
		_ = p.Only(key)
	})
}

// FuzzVerifiers runs every verifier on arbitrary model output against a
// valid reference: no panic, no error, a score in [0, 1]. With arbitrary
// references and parameters it may fail, but only with an error.
func FuzzVerifiers(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "B", `{}`)
	}
	f.Add("<answer>[0,0,5,5]</answer>", "[0,0,10,10]", `{"threshold": 0.3}`)
	f.Add("<answer>7</answer>", "7", `{"tol": 0.1, "extract": "none"}`)
	all := allVerifiers(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, pred, ref, params string) {
		var p verifiers.Params
		_ = json.Unmarshal([]byte(params), &p)
		for name, v := range all {
			res, err := v.Verify(ctx, pred, validRefs[name], nil)
			if err != nil || !(res.Score >= 0 && res.Score <= 1) {
				t.Errorf("%s(%q, valid ref) = %+v, %v", name, pred, res, err)
			}
			res, err = v.Verify(ctx, pred, ref, p)
			if err == nil && !(res.Score >= 0 && res.Score <= 1) {
				t.Errorf("%s(%q, %q, %v) = %+v", name, pred, ref, p, res)
			}
		}
	})
}

func FuzzSSIM(f *testing.F) {
	f.Add(uint8(4), []byte{0, 255, 3, 9, 77, 1, 2, 3}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, width uint8, a, b []byte) {
		w := int(width%24) + 1
		h := len(a) / w
		if h == 0 || len(b) == 0 {
			return
		}
		x := grayImage(w, h, func(i, j int) uint8 { return a[j*w+i] })
		y := grayImage(w, h, func(i, j int) uint8 { return b[(j*w+i)%len(b)] })
		s, err := verifiers.SSIM(x, y)
		if err != nil || !(s >= -1-1e-9 && s <= 1+1e-9) {
			t.Errorf("SSIM = %v, %v", s, err)
		}
		if self, _ := verifiers.SSIM(x, x); math.Abs(self-1) > 1e-9 {
			t.Errorf("SSIM(x, x) = %v", self)
		}
	})
}

func FuzzAssign(f *testing.F) {
	f.Add(uint8(3), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, cols uint8, data []byte) {
		m := int(cols%6) + 1
		n := min(len(data)/m, 6)
		cost := make([][]float64, n)
		for i := range cost {
			cost[i] = make([]float64, m)
			for j := range cost[i] {
				cost[i][j] = float64(int8(data[i*m+j]))
			}
		}
		got, err := verifiers.Assign(make([]int, n), cost)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteAssign(cost, m); got != want {
			t.Errorf("Assign(%v) = %v, brute force %v", cost, got, want)
		}
	})
}

// FuzzScoring drives the numeric entry points with arbitrary numbers.
func FuzzScoring(f *testing.F) {
	f.Add(0.0, 0.0, 10.0, 10.0, 1.0, 2.0, 9.0, 11.0, 0.5, 0.3)
	f.Add(math.Inf(1), -1.0, math.NaN(), 1e308, 0.0, 0.0, 0.0, 0.0, 2.0, -1.0)
	f.Fuzz(func(t *testing.T, a0, a1, a2, a3, b0, b1, b2, b3, p, tau float64) {
		a, b := verifiers.Box{a0, a1, a2, a3}, verifiers.Box{b0, b1, b2, b3}
		if iou := verifiers.IoU(a, b); !(iou >= 0 && iou <= 1) {
			t.Errorf("IoU(%v, %v) = %v", a, b, iou)
		}
		if th, err := verifiers.DynamicIoU(p); err == nil && !(th >= 0.85 && th <= 0.99) {
			t.Errorf("DynamicIoU(%v) = %v", p, th)
		}
		cfg := verifiers.DefaultDetectionConfig()
		cfg.Threshold, cfg.Optimal = p, tau > 0.5
		gt := []verifiers.Detection{{Label: "a", Box: a}}
		pred := []verifiers.Detection{{Label: "a", Box: b}, {Label: "A", Box: a}}
		if ds, err := verifiers.ScoreDetections(gt, pred, cfg); err == nil && !(ds.Score >= 0 && ds.Score <= 1) {
			t.Errorf("ScoreDetections = %+v", ds)
		}
		if ctl, err := verifiers.NewAdaptiveIoU(tau); err == nil {
			if th, err := ctl.Observe([]float64{p, math.Abs(a0)}); err == nil && !(th >= 0.5 && th <= 0.99) {
				t.Errorf("AdaptiveIoU threshold %v", th)
			}
		}
	})
}

// FuzzReadNumbers checks that ReadNumbers never panics, returns at most
// its bound of numbers, and reads back the canonical form of each.
func FuzzReadNumbers(f *testing.F) {
	for _, s := range []string{"−3", "1,234,567", "1.5e3", "2^10", "3/4", `\frac{3}{4}`, "50%", "1e99999", "1,2", "x_1 = 7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, _ := verifiers.ReadNumbers(s)
		if len(vals) > 64 {
			t.Fatalf("ReadNumbers(%q): %d numbers", s, len(vals))
		}
		for _, v := range vals {
			back, _ := verifiers.ReadNumbers(v.RatString())
			if len(back) != 1 || back[0].Cmp(v) != 0 {
				t.Fatalf("ReadNumbers(%q) gave %v, which reads back as %v", s, v, back)
			}
		}
	})
}

// FuzzReadChoice checks that ReadChoice names an upper-case letter with no
// reason, or gives a reason.
func FuzzReadChoice(f *testing.F) {
	for _, s := range []string{"B", "(B)", "Option B", "A, B", "A cat", `\textbf{(C)}`, "I choose B."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, reason, ok := verifiers.ReadChoice(s)
		if ok && (reason != "" || !unicode.IsLetter(r) || unicode.ToUpper(r) != r) || !ok && reason == "" {
			t.Fatalf("ReadChoice(%q) = %q, %q, %v", s, r, reason, ok)
		}
	})
}

// FuzzOCRSimilarity checks the banded, budgeted OCR score against the
// full edit-distance table on strings small enough for both.
func FuzzOCRSimilarity(f *testing.F) {
	f.Add("kitten", "sitting", "mitten")
	f.Add("日本語", "日本", "")
	f.Add("abcdefgh", "hgfedcba", "abcdefgi")
	f.Fuzz(func(t *testing.T, pred, t1, t2 string) {
		if len(pred) > 300 || len(t1) > 300 || len(t2) > 300 {
			return
		}
		targets := []string{t1, t2}
		got, limited, err := verifiers.OCRSimilarityContext(context.Background(), pred, targets)
		if err != nil || limited {
			t.Fatalf("OCRSimilarityContext(%q, %q): %v, %v, limited %v", pred, targets, got, err, limited)
		}
		want := 0.0
		rp := []rune(pred)
		for _, tg := range targets {
			n := max(len([]rune(tg)), len(rp))
			if n == 0 {
				want = 1
				break
			}
			d, err := verifiers.EditDistance(tg, pred)
			if err != nil {
				t.Fatal(err)
			}
			want = max(want, 1-float64(d)/float64(n))
		}
		if want < 0.5 {
			want = 0
		}
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("OCRSimilarityContext(%q, %q) = %v, full table %v", pred, targets, got, want)
		}
	})
}
