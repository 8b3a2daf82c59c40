package verifiers

// The built-in verifiers join the Default registry when the package is
// loaded, math (package mathverify) among them; "svg" runs without a
// renderer (see SVG). One line per verifier.
func init() {
	for _, b := range []struct {
		name string
		f    Factory
	}{
		{"answer", answerRule.New},
		{"math", mathRule.New},
		{"choice", choiceRule.New},
		{"number", numberRule.New},
		{"iou", iouRule.New},
		{"detection", detectionRule.New},
		{"ocr", ocrRule.New},
		{"html", htmlRule.New},
		{"svg", SVG{}.New},
		{"format", formatRule.New},
		{"format_tags", formatTagsRule.New},
		{"temporal_iou", temporalIoURule.New},
		{"think_boxed_format", thinkBoxedRule.New},
		{"vagen_format", vagenRule.New},
		{"structured_f1", structuredF1Rule.New},
		{"qa", qaRule.New},
		{"ifeval", ifevalRule.New},
	} {
		if err := Default.Register(b.name, b.f); err != nil {
			panic(err)
		}
	}
}
