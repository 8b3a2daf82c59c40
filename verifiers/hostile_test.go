package verifiers_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileBudget is how long one verification of adversarial input may take.
// The verifiers take milliseconds on these inputs; the bound is generous so
// that a slow, shared CI machine (or the race detector) does not flake.
const hostileBudget = 2 * time.Second

// validRefs gives each verifier a reference it accepts.
// validParams are the parameters a verifier cannot be built without.
var validParams = map[string]verifiers.Params{
	"ifeval": {"min_words": 3.0, "keywords": []any{"cat"}, "forbidden_words": []any{"dog"}, "case": "lower", "json": false},
}

var validRefs = map[string]string{
	"answer":      "42",
	"choice":      "B",
	"number":      "42",
	"math":        "42",
	"iou":         "[0, 0, 10, 10]",
	"detection":   `[{"label": "cat", "bbox": [0, 0, 10, 10]}]`,
	"ocr":         "hello world",
	"html":        "<div><p>hello</p></div>",
	"svg":         `<svg><rect d="[0,0,10,10]"/></svg>`,
	"format":      "",
	"format_tags": "",
}

// hostileInputs are adversarial model outputs just under MaxInputBytes.
func hostileInputs() map[string]string { return hostileInputsN(verifiers.MaxInputBytes - 64) }

// hostileInputsN are adversarial model outputs of about n bytes.
func hostileInputsN(n int) map[string]string {
	rng := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, n)
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	fill := func(unit string) string { return strings.Repeat(unit, n/len(unit)) }
	half := n / 2
	return map[string]string{
		"random bytes":       string(random),
		"invalid utf-8":      fill("\xff\xfe\xc3"),
		"digits":             fill("9"),
		"huge exponent":      fill("[1e99999999,"),
		"open brackets":      fill("["),
		"nested brackets":    strings.Repeat("[", half) + strings.Repeat("]", half),
		"nested objects":     strings.Repeat(`{"a":`, half/5) + "1" + strings.Repeat("}", half/5),
		"open boxed":         fill(`\boxed{`),
		"nested boxed":       strings.Repeat(`\boxed{`, half/7) + strings.Repeat("}", half/7),
		"answer tags":        fill("<answer>"),
		"answer pairs":       fill("<answer>1</answer>"),
		"tags":               fill("<a"),
		"think tags":         fill("<think></think>"),
		"boxes":              fill("[1,2,3,4]"),
		"near boxes":         fill("[1,2,3,"),
		"detections":         "[" + strings.Repeat(`{"label":"cat","bbox":[0,0,10,10]},`, n/40) + "]",
		"numbers and commas": fill("1,000,"),
		"letters":            fill("ab"),
		"long answer":        "<answer>" + fill("x")[:n-20] + "</answer>",
		"long unicode":       fill("北京"),
	}
}

// verifyWith builds a verifier with per-call parameters, to feed every
// verifier the same inputs.
type verifyWith func(ctx context.Context, response, reference string, p verifiers.Params) (verifiers.Result, error)

func (f verifyWith) Verify(ctx context.Context, response, reference string, p verifiers.Params) (verifiers.Result, error) {
	return f(ctx, response, reference, p)
}

func allVerifiers(t testing.TB) map[string]verifyWith {
	build := func(f verifiers.Factory, name string) verifyWith {
		return func(ctx context.Context, response, reference string, p verifiers.Params) (verifiers.Result, error) {
			if p == nil {
				p = validParams[name] // nil for all but those that need an instruction
			}
			v, err := f(p)
			if err != nil {
				return verifiers.Result{}, err
			}
			return v.Verify(ctx, response, reference)
		}
	}
	all := map[string]verifyWith{"svg": build(verifiers.SVG{Render: boxRenderer(32, 32)}.New, "svg")}
	for _, name := range verifiers.Names() {
		f, err := verifiers.Default.Factory(name)
		require.NoError(t, err)
		if name != "svg" {
			all[name] = build(f, name)
		}
	}
	return all
}

// TestHostileInputsAreBounded feeds every verifier megabyte-sized hostile
// model output, and the same as reference, and requires a score in [0, 1]
// or an error, within hostileBudget, and no panic.
func TestHostileInputsAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("megabyte inputs")
	}
	ctx := context.Background()
	var slowest, total time.Duration
	var slowestCase string
	calls := 0
	for name, v := range allVerifiers(t) {
		for kind, input := range hostileInputs() {
			for _, asRef := range []bool{false, true} {
				pred, ref := input, validRefs[name]
				if asRef {
					pred, ref = "<answer>42</answer>", input
				}
				start := time.Now()
				res, err := v.Verify(ctx, pred, ref, nil)
				took := time.Since(start)
				total += took
				calls++
				if took > slowest {
					slowest, slowestCase = took, name+"/"+kind
				}
				assert.LessOrEqual(t, took, hostileBudget, "%s on %s (as ref %v) took", name, kind, asRef)
				if err == nil && !(res.Score >= 0 && res.Score <= 1) {
					t.Errorf("%s on %s (as ref %v): score %v", name, kind, asRef, res.Score)
				}
				if err != nil && !asRef && !errors.Is(err, verifiers.ErrTooLarge) {
					t.Errorf("%s on %s: hostile prediction gave an error other than ErrTooLarge: %v", name, kind, err)
				}
			}
		}
	}
	t.Logf("%d calls, mean %v, slowest %v (%s)", calls, total/time.Duration(calls), slowest, slowestCase)
}

// TestOverLimit checks that a pred over the size limit is a verdict of 0
// with a reason (model output earns nothing), and a ref over it is the
// trainer's error.
func TestOverLimit(t *testing.T) {
	big := strings.Repeat("a", verifiers.MaxInputBytes+1)
	for name, v := range allVerifiers(t) {
		start := time.Now()
		res, err := v.Verify(context.Background(), big, validRefs[name], nil)
		require.NoError(t, err, "%s with pred over the limit: %+v; want 0 with a reason", name, res)
		assert.Equal(t, float64(0), res.Score, "%s with pred over the limit: %+v; want 0 with a reason", name, res)
		assert.NotEmpty(t, res.Reason, "%s with pred over the limit: %+v; want 0 with a reason", name, res)
		_, err = v.Verify(context.Background(), "x", big, nil)
		assert.ErrorIs(t, err, verifiers.ErrTooLarge, "%s with ref over the limit", name)
		if took := time.Since(start); took > hostileBudget {
			t.Errorf("%s: rejecting oversized input took %v", name, took)
		}
	}
}

// TestQuadraticPathsAreCapped checks the verifiers whose work is
// inherently quadratic at their caps.
func TestQuadraticPathsAreCapped(t *testing.T) {
	ctx := context.Background()
	// OCR: the largest table allowed, two different strings of 2048 runes.
	a := strings.Repeat("日本", 1024)
	b := strings.Repeat("本日", 1024)
	start := time.Now()
	res, err := verifiers.OCR(ctx, a, b, nil)
	took := time.Since(start)
	require.NoError(t, err, "ocr at MaxEditCells: %+v", res)
	assert.LessOrEqual(t, took, hostileBudget, "ocr at MaxEditCells: %+v", res)
	// Past the old full-table cap the banded table still finds a small
	// distance: a score, not an error.
	res, err = verifiers.OCR(ctx, a+"x", b+"y", nil)
	require.NoError(t, err, "ocr past MaxEditCells: %+v", res)
	assert.GreaterOrEqual(t, res.Score, 0.99, "ocr past MaxEditCells: %+v", res)
	// 32 K against 32 K unrelated characters, and 31 references of 2 KB:
	// bounded work per call, a score (with a reason if the budget ran out).
	x, y := strings.Repeat("abcdefgh", 4096), strings.Repeat("hgfedcba", 4096)
	refs, _ := json.Marshal(slices.Repeat([]string{strings.Repeat("qwertyuiop", 205)}, 31))
	for _, c := range [][2]string{{x, y}, {strings.Repeat("poiuytrewq", 205), string(refs)}} {
		start := time.Now()
		res, err := verifiers.OCR(ctx, c[0], c[1], nil)
		took := time.Since(start)
		require.NoError(t, err, "ocr %d against %d bytes: %+v", len(c[0]), len(c[1]), res)
		assert.LessOrEqual(t, took, hostileBudget, "ocr %d against %d bytes: %+v", len(c[0]), len(c[1]), res)
		assert.Equal(t, float64(0), res.Score, "ocr %d against %d bytes: %+v", len(c[0]), len(c[1]), res)
	}
	// Detection: MaxBoxes on both sides, optimal matching.
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range verifiers.MaxBoxes {
		if i > 0 {
			sb.WriteByte(',')
		}
		x := float64(i % 16 * 10)
		y := float64(i / 16 * 10)
		sb.WriteString(`{"label":"a","bbox":[` + ftoa(x) + "," + ftoa(y) + "," + ftoa(x+9) + "," + ftoa(y+9) + "]}")
	}
	sb.WriteByte(']')
	boxes := sb.String()
	start = time.Now()
	res, err = verifiers.DetectionVerifier(ctx, boxes, boxes, verifiers.Params{"matching": "optimal"})
	took = time.Since(start)
	require.NoError(t, err, "detection with %d boxes, optimal: %+v", verifiers.MaxBoxes, res)
	assert.Equal(t, float64(1), res.Score, "detection with %d boxes, optimal: %+v", verifiers.MaxBoxes, res)
	assert.LessOrEqual(t, took, hostileBudget, "detection with %d boxes, optimal: %+v", verifiers.MaxBoxes, res)
	over := strings.Replace(boxes, "[", `[{"label":"a","bbox":[0,0,1,1]},`, 1)
	res, err = verifiers.DetectionVerifier(ctx, over, boxes, nil)
	require.NoError(t, err, "prediction over MaxBoxes: %+v; want score 0", res)
	assert.Equal(t, float64(0), res.Score, "prediction over MaxBoxes: %+v; want score 0", res)
	_, err = verifiers.DetectionVerifier(ctx, boxes, over, nil)
	assert.ErrorIs(t, err, verifiers.ErrTooLarge, "reference over MaxBoxes")
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
