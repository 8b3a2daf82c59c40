// Package verifiers scores model output against references with rules
// (docs/spec.md#rewards-and-verifiers): the Verifier interface, a registry keyed by V-Triune's
// `verifier` name, and the rule verifiers of V-Triune (seed
// 003_1baf8ead00bcbfc5, §3.2) and LLaVA-OneVision-1.5 (seed
// 002_54cb955a71cfac75, reward/ modules).
//
// # Interface
//
// A Verifier maps (pred, ref, params) to a Result: Score in [0, 1], Correct,
// and Parsed, what was extracted from the prediction. Params is V-Triune's
// per-sample verifier_parm (Fig. 8). A malformed prediction scores 0 with no
// error; errors report what the trainer supplied: an unparseable reference,
// a bad or unknown parameter (wrapping ErrParam), input over a limit
// (ErrTooLarge), a cancelled context. Errors about inputs are
// *tensor.ArgError values naming the argument ("ref", `params["threshold"]`).
//
// Correct is an exact match for answer, choice and number; IoU ≥ ε (0.5
// when ε = 0) for iou; every ground-truth box matched and nothing else
// predicted for detection; a score of 1 for ocr and the format verifiers;
// a score ≥ "pass" (default 1) for html and svg.
//
// # Registry keys (Default)
//
//	answer       exact match of the extracted answer (extract, ignore_case)
//	choice       first letter, case-insensitive (extract)
//	number       last number, exact decimal or relative tolerance (extract, tol)
//	iou          one box, IoU with threshold ε (extract, threshold | progress)
//	detection    multi-box, label-first matching (extract, threshold | progress,
//	             matching, completeness, count_penalty)
//	ocr          1 − Levenshtein/max length over characters, 0 below 0.5 (extract, ignore_case)
//	html         0.6·token Jaccard + 0.4·tag-set Jaccard (extract, pass)
//	format       AVATAR's <think>…</think><answer>…</answer>, 1 or 0
//	format_tags  V-Triune Eq. 2, 0.25 per tag occurring exactly once
//
// "svg" needs a renderer and is registered by the caller (type SVG). "math"
// belongs to package mathverify.
//
// # Extraction
//
// The answer a verifier scores comes from the prediction by the "extract"
// parameter: "auto" (default for most) takes the content of the last
// closed <answer>…</answer> (else the whole text), then the content of the
// last \boxed{…} with balanced braces inside it, if any; "code" (default
// for html and svg) takes the last ``` fenced block instead of \boxed;
// "answer", "boxed" and "none" use one source only. References are used as
// given, trimmed.
//
// # Definitions
//
// Multiple choice (LLaVA multiple_choice): the first letter (any script) of
// the answer equals the first letter of ref, case-insensitively.
//
// Number (LLaVA number): the last number of the answer equals the last
// number of ref. Numbers are compared as canonical decimal strings ("1,024.50"
// = "1024.5"), so any length compares exactly; "tol" > 0 allows
// |a − b| ≤ tol·|b| in float64. Exponents are not read.
//
// IoU (V-Triune Eq. 3; LLaVA bbox): Area(a∩b)/Area(a∪b), scored as IoU if
// IoU ≥ ε else 0.
//
// Detection (V-Triune DetectionVerifier): for each ground-truth box in
// order, the unmatched prediction of the same label with the highest
// IoU ≥ threshold (greedy, label-first), or the assignment of maximum total
// IoU (matching "optimal", Hungarian method, Assign). Then
//
//	completeness = 1 − (miss rate + false-alarm rate)/2
//	score = (meanIoU·(1 − c) + completeness·c) · 0.6^|#pred − #gt|,  c = 0.3
//
// with meanIoU the mean IoU of the matched pairs. The threshold follows
// Dynamic IoU during training (§3.2.1, §4.5): 0.85 for progress p ≤ 0.10,
// 0.95 for p ≤ 0.25, 0.99 after (DynamicIoU; "progress" parameter), or the
// adaptive controller of Appendix J (AdaptiveIoU: levels 0.5, 0.55, …,
// 0.95, 0.99; up one level when the batch success rate exceeds τ, down one
// when below).
//
// OCR (LLaVA ocr): 1 − min over targets of Levenshtein(target, pred) /
// max(len(target), len(pred)), lengths and edits in characters (runes), 0
// if below 0.5. ref is one target or a JSON array of targets.
//
// HTML (LLaVA htmlcode): 0.6·J(tokens) + 0.4·J(tag names), J the Jaccard
// index of sets; tokens are runs of letters, digits and '_'; tag names
// follow "<" or "</", lower-cased.
//
// SVG (LLaVA svgcode): 0.5·max(0, SSIM) + 0.25·(J(tokens) + J(tags)), SSIM
// of the caller's renderings in grayscale (Wang et al. 2004: 11×11 Gaussian
// window, σ = 1.5, K1 = 0.01, K2 = 0.03, L = 255, mean over the valid
// region).
//
// Format: AVATAR Eq. 7 checks <think>…</think><answer>…</answer> (the ±1
// reward is in package rewards); V-Triune Eq. 2 gives 0.25 for each of the
// four tags that occurs exactly once.
//
// # Text formats
//
// Boxes (iou): the last group of four numbers in [] or () of the text:
// "[10, 20, 110, 220]", "(10,20,110,220)", or the box inside
// {"bbox_2d": [10, 20, 110, 220]}. Coordinates are x1, y1, x2, y2 with
// x1 ≤ x2, y1 ≤ y2, in one unit for both sides.
//
// Detections (detection): a JSON array of {"label": "cat", "bbox": [x1,
// y1, x2, y2]} ("bbox_2d" also accepted), or one such object, from the
// first '[' or '{' of the text, so a ```json fence or words around it do
// not matter; it may sit inside <answer>…</answer>. Labels compare
// trimmed and case-insensitively. An empty array is a valid answer.
//
// Params (verifier_parm): a JSON object; numbers, booleans and strings as
// documented per verifier. Unknown keys are an error, so a misspelling
// cannot silently fall back to a default.
//
// # Limits
//
// Every built-in verifier rejects pred or ref over MaxInputBytes (1 MiB)
// with ErrTooLarge and otherwise works in time linear in the input, except
// where a quadratic table is inherent: edit distance is bounded by
// MaxEditCells (4 Mi cells, after removing the common prefix and suffix and
// skipping targets whose length alone puts them below 0.5), detection by
// MaxBoxes (256) boxes per side, SSIM by MaxPixels (4 Mi pixels). No parser
// recurses on its input: \boxed{} nesting of any depth is one linear pass,
// box scanning is linear, and detection JSON goes through encoding/json,
// which rejects nesting beyond 10 000 levels. Numbers of any length
// compare exactly as strings; box coordinates beyond float64 make the box
// unreadable. Invalid UTF-8 counts one character per bad byte.
package verifiers
