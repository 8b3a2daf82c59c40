package verifiers_test

import (
	"context"
	"errors"
	"image"
	"slices"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/testkit/apitest"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failure is one documented failure mode of an exported function: the
// call with bad input, the kinds errors.Is must find, and whether the
// error is about an input (then errors.As finds a *tensor.ArgError naming
// arg).
type failure struct {
	call  func() error
	kinds []error
	arg   string // the ArgError's Arg; "" when the error is not an input error
}

// allKinds are the kinds whose text an error must show when it wraps them.
var allKinds = []error{
	tensor.ErrShape, tensor.ErrNonFinite, tensor.ErrMask, tensor.ErrEmpty, tensor.ErrRange,
	verifiers.ErrParam, verifiers.ErrSyntax, verifiers.ErrTooLarge, verifiers.ErrUnknown,
}

// checkFailure runs f and checks errors.Is, errors.As, the prefix and
// that the text and the kinds agree ("out of range" exactly when
// errors.Is finds tensor.ErrRange).
func checkFailure(t *testing.T, name, prefix string, f failure) {
	t.Helper()
	err := f.call()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	for _, k := range f.kinds {
		assert.ErrorIs(t, err, k, "%s: %q does not wrap %q", name, err, k)
	}
	for _, k := range allKinds {
		if errors.Is(err, k) && !strings.Contains(err.Error(), k.Error()) {
			t.Errorf("%s: %q wraps %q but does not say so", name, err, k)
		}
	}
	if strings.Contains(err.Error(), "out of range") != errors.Is(err, tensor.ErrRange) {
		t.Errorf("%s: %q: the text and errors.Is(tensor.ErrRange) disagree", name, err)
	}
	var ae *tensor.ArgError
	switch {
	case f.arg != "" && !errors.As(err, &ae):
		t.Errorf("%s: %q is not a *tensor.ArgError", name, err)
	case f.arg != "" && ae.Arg != f.arg:
		t.Errorf("%s: %q names %q, want %q", name, err, ae.Arg, f.arg)
	}
	if prefix != "" && !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("%s: %q does not start with %q", name, err, prefix)
	}
}

// checkCoverage fails for an exported function returning an error that
// the failure table does not cover and the exempt list does not excuse.
func checkCoverage(t *testing.T, dir string, covered map[string]failure, exempt map[string]string) {
	t.Helper()
	names, err := apitest.ErrorFuncs(dir)
	require.NoError(t, err)
	for _, n := range names {
		_, ok := covered[n]
		if _, ex := exempt[n]; !ok && !ex {
			t.Errorf("%s returns an error but has no failure case", n)
		}
	}
	for n := range covered {
		assert.True(t, slices.Contains(names, n), "failure case for %s, which is not an exported function returning an error", n)
	}
}

// TestFailureModes walks every exported function of package verifiers
// that returns an error with bad input.
func TestFailureModes(t *testing.T) {
	ctx := context.Background()
	bad := verifiers.Params{"bogus": 1.0}
	adaptive, err := verifiers.NewAdaptiveIoU(0.5)
	require.NoError(t, err)
	var reg verifiers.Registry
	svg := verifiers.SVG{Render: boxRenderer(8, 8)}
	param := func(key string) string { return `params["` + key + `"]` }
	cases := map[string]failure{
		"AdaptiveIoU.Observe": {func() error { _, err := adaptive.Observe(nil); return err }, []error{tensor.ErrEmpty}, "ious"},
		"AdaptiveIoU.Step":    {func() error { _, err := adaptive.Step(2); return err }, []error{tensor.ErrRange}, "bsr"},
		"Answer":              {func() error { _, err := verifiers.Answer(ctx, "a", "a", bad); return err }, []error{verifiers.ErrParam}, param("bogus")},
		"Assign": {func() error { _, err := verifiers.Assign(make([]int, 2), [][]float64{{1, 2}, {3}}); return err },
			[]error{tensor.ErrShape}, "cost"},
		"Choice":                   {func() error { _, err := verifiers.Choice(ctx, "A", "123", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"DetectionConfig.Validate": {func() error { return verifiers.DetectionConfig{}.Validate() }, []error{tensor.ErrRange}, "DetectionConfig.Threshold"},
		"DetectionVerifier":        {func() error { _, err := verifiers.DetectionVerifier(ctx, "[]", `[{"label": "cat"`, nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"DynamicIoU":               {func() error { _, err := verifiers.DynamicIoU(1.5); return err }, []error{tensor.ErrRange}, "p"},
		"EditDistance": {func() error {
			_, err := verifiers.EditDistance(strings.Repeat("a", 1<<12), strings.Repeat("b", 1<<11))
			return err
		}, []error{verifiers.ErrTooLarge}, "a, b"},
		"Format":               {func() error { _, err := verifiers.Format(ctx, "", "", bad); return err }, []error{verifiers.ErrParam}, param("bogus")},
		"FormatTagsVerifier":   {func() error { _, err := verifiers.FormatTagsVerifier(ctx, "", "", bad); return err }, []error{verifiers.ErrParam}, param("bogus")},
		"HTML":                 {func() error { _, err := verifiers.HTML(ctx, "", "<p/>", verifiers.Params{"pass": 2.0}); return err }, []error{verifiers.ErrParam}, param("pass")},
		"IoUSchedule.At":       {func() error { _, err := verifiers.DynamicIoUSchedule().At(-1); return err }, []error{tensor.ErrRange}, "p"},
		"IoUSchedule.Validate": {func() error { return verifiers.IoUSchedule{}.Validate() }, []error{tensor.ErrShape}, "IoUSchedule.Thresholds"},
		"IoUVerifier":          {func() error { _, err := verifiers.IoUVerifier(ctx, "[0,0,1,1]", "no box", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"Lookup":               {func() error { _, err := verifiers.Lookup("nope"); return err }, []error{verifiers.ErrUnknown}, ""},
		"Math":                 {func() error { _, err := verifiers.Math(ctx, "1", `\frac{`, nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"New":                  {func() error { _, err := verifiers.New("number", verifiers.Params{"tol": -1.0}); return err }, []error{verifiers.ErrParam}, param("tol")},
		"NewAdaptiveIoU":       {func() error { _, err := verifiers.NewAdaptiveIoU(-0.5); return err }, []error{tensor.ErrRange}, "tau"},
		"Number":               {func() error { _, err := verifiers.Number(ctx, "1", "n/a", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"OCR":                  {func() error { _, err := verifiers.OCR(ctx, "a", `["a", `, nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"Rewards": {func() error {
			return verifiers.Rewards(make([]float64, 1), nil, []verifiers.Result{{Timeout: true}})
		}, []error{tensor.ErrRange}, "results"},
		"OCRSimilarity":        {func() error { _, err := verifiers.OCRSimilarity("a", nil); return err }, []error{tensor.ErrEmpty}, "targets"},
		"OCRSimilarityContext": {func() error { _, _, err := verifiers.OCRSimilarityContext(ctx, "a", nil); return err }, []error{tensor.ErrEmpty}, "targets"},
		"Params.Bool":          {func() error { _, err := verifiers.Params{"b": "yes"}.Bool("b", false); return err }, []error{verifiers.ErrParam}, param("b")},
		"Params.Enum":          {func() error { _, err := verifiers.Params{"e": "c"}.Enum("e", "a", "a", "b"); return err }, []error{verifiers.ErrParam}, param("e")},
		"Params.Float":         {func() error { _, err := verifiers.Params{"f": "1"}.Float("f", 0); return err }, []error{verifiers.ErrParam}, param("f")},
		"Params.Int":           {func() error { _, err := verifiers.Params{"i": 1.5}.Int("i", 0); return err }, []error{verifiers.ErrParam}, param("i")},
		"Params.Only":          {func() error { return verifiers.Params{"x": 1.0}.Only("y") }, []error{verifiers.ErrParam}, param("x")},
		"Params.String":        {func() error { _, err := verifiers.Params{"s": 1.0}.String("s", ""); return err }, []error{verifiers.ErrParam}, param("s")},
		"Params.Strings":       {func() error { _, err := verifiers.Params{"s": []any{1.0}}.Strings("s"); return err }, []error{verifiers.ErrParam}, param("s")},
		"ParseDetections":      {func() error { _, err := verifiers.ParseDetections("no json"); return err }, []error{verifiers.ErrSyntax}, "detections"},
		"ParseIntervalRef":     {func() error { _, err := verifiers.ParseIntervalRef("soon"); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"Register":             {func() error { return verifiers.Register("math", verifiers.SVG{}.New) }, []error{verifiers.ErrParam}, "name"},
		"Registry.Factory":     {func() error { _, err := reg.Factory("nope"); return err }, []error{verifiers.ErrUnknown}, ""},
		"Registry.Lookup":      {func() error { _, err := reg.Lookup("nope"); return err }, []error{verifiers.ErrUnknown}, ""},
		"Registry.New":         {func() error { _, err := verifiers.Default.New("math", verifiers.Params{"precison": 2.0}); return err }, []error{verifiers.ErrParam}, param("precison")},
		"Registry.Register":    {func() error { return reg.Register("two words", verifiers.SVG{}.New) }, []error{verifiers.ErrParam}, "name"},
		"Registry.Verify":      {func() error { _, err := verifiers.Default.Verify(ctx, "math", "1", "}}}", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"SSIM": {func() error {
			_, err := verifiers.SSIM(image.NewGray(image.Rect(0, 0, 4, 4)), image.NewGray(image.Rect(0, 0, 5, 4)))
			return err
		}, []error{tensor.ErrShape}, "b"},
		"SVG.New":    {func() error { _, err := svg.New(verifiers.Params{"pass": -1.0}); return err }, []error{verifiers.ErrParam}, param("pass")},
		"SVG.Verify": {func() error { _, err := svg.Verify(ctx, "<svg/>", "<svg/>", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"ScoreDetections": {func() error {
			_, err := verifiers.ScoreDetections([]verifiers.Detection{{Label: "a", Box: verifiers.Box{2, 2, 1, 1}}}, nil, verifiers.DefaultDetectionConfig())
			return err
		}, []error{tensor.ErrRange}, "gt"},
		"IFEval":               {func() error { _, err := verifiers.IFEval(ctx, "x", "", nil); return err }, []error{verifiers.ErrParam}, param("instructions")},
		"QA":                   {func() error { _, err := verifiers.QA(ctx, "x", `["a"`, nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"StructuredF1Verifier": {func() error { _, err := verifiers.StructuredF1Verifier(ctx, "{}", "[1]", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"StructuredFacts":      {func() error { _, err := verifiers.StructuredFacts("{"); return err }, []error{verifiers.ErrSyntax}, "dictionary"},
		"TemporalIoUVerifier":  {func() error { _, err := verifiers.TemporalIoUVerifier(ctx, "[1, 2]", "[2, 1]", nil); return err }, []error{verifiers.ErrSyntax}, "ref"},
		"ThinkBoxedFormat": {func() error {
			_, err := verifiers.ThinkBoxedFormat(ctx, "", "", verifiers.Params{"max_ratio": 0.0})
			return err
		}, []error{verifiers.ErrParam}, param("max_ratio")},
		"VAGENFormat": {func() error { _, err := verifiers.VAGENFormat("", "free"); return err }, []error{verifiers.ErrParam}, param("style")},
		"VAGENFormatVerifier": {func() error {
			_, err := verifiers.VAGENFormatVerifier(ctx, "", "", verifiers.Params{"style": "free"})
			return err
		}, []error{verifiers.ErrParam}, param("style")},
	}
	// Building blocks whose errors their callers wrap, with the caller's
	// prefix; Params getters and Validate methods, as in the rest of the
	// module, return the bare *tensor.ArgError.
	bare := map[string]bool{
		"Params.Bool": true, "Params.Enum": true, "Params.Float": true, "Params.Int": true,
		"Params.Only": true, "Params.String": true, "Params.Strings": true, "DetectionConfig.Validate": true, "IoUSchedule.Validate": true,
	}
	for name, f := range cases {
		prefix := "verifiers: "
		if bare[name] {
			prefix = ""
		}
		checkFailure(t, name, prefix, f)
	}
	checkCoverage(t, ".", cases, map[string]string{
		"Func.Verify":      "returns what the caller's function returns",
		"ParamFunc.Verify": "returns what the caller's function returns",
	})
}
