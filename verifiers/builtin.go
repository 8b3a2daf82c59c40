package verifiers

// The built-in verifiers join the Default registry when the package is
// loaded; "math" adapts package mathverify, "svg" runs without a renderer
// (see SVG). One line per verifier.
func init() {
	for _, b := range []struct {
		name string
		f    Func
	}{
		{"answer", Answer},
		{"math", Math},
		{"choice", Choice},
		{"number", Number},
		{"iou", IoUVerifier},
		{"detection", DetectionVerifier},
		{"ocr", OCR},
		{"html", HTML},
		{"svg", SVG{}.Verify},
		{"format", Format},
		{"format_tags", FormatTagsVerifier},
		{"temporal_iou", TemporalIoUVerifier},
		{"think_boxed_format", ThinkBoxedFormat},
		{"vagen_format", VAGENFormatVerifier},
		{"structured_f1", StructuredF1Verifier},
	} {
		if err := Default.Register(b.name, b.f); err != nil {
			panic(err)
		}
	}
}
