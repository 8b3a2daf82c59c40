// Package verifiers scores model output against references with rules
// (docs/spec.md#rewards-and-verifiers): the Verifier interface, a registry keyed by
// V-Triune's `verifier` name, and the rule verifiers of "One RL to See
// Them All" (V-Triune, arXiv 2505.18129, §3.2) and of LLaVA-OneVision-1.5's
// RL recipe (its reward modules).
//
// # Interface
//
// A Verifier maps (ctx, response, reference) to a Result — response, the
// model's output, first; reference, the trusted answer, second: the JSON
// contract's "pred" and "gold" (docs/conformance.md). A Result holds Score
// in [0, 1], Correct, Parsed (the answer as read from the response: a
// formula as parsed, words as written) and Timeout and Reason.
//
// Parameters (V-Triune's per-sample verifier_parm, Fig. 8) are read once,
// when a verifier is built:
//
//	v, err := verifiers.New("number", verifiers.Params{"tol": 0.01}) // checks the params
//	res, err := v.Verify(ctx, response, reference)                   // reads none
//
// Registry.Verify(ctx, name, response, reference, params), the form of
// `rlpost verify` and `rlpost serve`, builds verifiers by name and caches
// them per (name, params), so a batch that repeats its parameters reads
// them once. The functions named after the verifiers (Number, Choice, Math,
// …) take the parameters on each call, for one-off use. A caller's own
// verifier is a Factory (WithoutParams for one without parameters, Adapt
// for one written against the interface of earlier releases) registered
// under a name.
//
// A malformed response scores 0 with no error, and the built-in verifiers
// say why in Reason (no answer slot, several answers, a malformed slot);
// so does a response over a size limit or a call that a verifier's own
// budget stopped (math's timeout_ms; Timeout set): model output never
// causes an error, and a sample is never dropped. A call past its
// context's deadline — the caller's, not the sample's — returns a Result
// with Timeout and a reason and an error wrapping context.DeadlineExceeded,
// so that a trainer cannot read an unjudged sample as a reward of 0: it
// marks the sample unscored (grpo.Inputs.Scored) or scores it again.
// Errors report what the trainer supplied, each a
// *tensor.ArgError naming the argument ("ref", `params["tol"]`) wrapping a
// kind for errors.Is:
//
//   - a reference that does not parse — `\frac{` or `}}}` for math, no
//     number for number, no letter for choice, no box for iou, broken JSON
//     for detection, ocr's array, temporal_iou and structured_f1 — wraps
//     ErrSyntax, never a 0 for every response;
//   - an unknown, misspelt or ill-typed parameter wraps ErrParam (math's
//     out-of-range values wrap tensor.ErrRange too), returned by New;
//   - a reference or params over a limit wrap ErrTooLarge;
//   - a cancelled context wraps context.Canceled, an expired deadline
//     context.DeadlineExceeded (with Result.Timeout set);
//   - a verifier name the registry does not hold wraps ErrUnknown (a plain
//     error listing the registered names, as the JSON contracts print it).
//
// Every error of this package starts "verifiers: ", a verifier's with its
// name: "verifiers: math: context canceled", "verifiers: number: ref:
// syntax error: no number in \"n/a\"". Params getters and Validate
// methods return the bare *tensor.ArgError for their caller to wrap.
//
// Correct is an exact match for answer, choice and number; IoU ≥ ε (0.5
// when ε = 0) for iou; every ground-truth box matched and nothing else
// predicted for detection; a score of 1 for ocr and the format verifiers;
// a score ≥ "pass" (default 1) for html and svg.
//
// # Registry keys (Default)
//
//	answer       exact match of the extracted answer (extract, ignore_case)
//	choice       one option letter in the answer slot (extract, lenient)
//	number       one number in the answer slot, exact or relative tolerance (extract, lenient, tol)
//	math         package mathverify on the answer slot (its keys, lenient);
//	             registered like the others, nothing to import or register
//	iou          one box, IoU with threshold ε (extract, threshold | progress)
//	detection    multi-box, label-first matching (extract, threshold | progress,
//	             matching, completeness, count_penalty)
//	ocr          1 − Levenshtein/max length over characters, 0 below 0.5 (extract, ignore_case)
//	html         0.6·token Jaccard + 0.4·tag-set Jaccard (extract, pass)
//	format       AVATAR's <think>…</think><answer>…</answer>, 1 or 0
//	format_tags  V-Triune Eq. 2, 0.25 per tag occurring exactly once
//
//	svg          without a renderer: 0.25·(token + tag Jaccard), with a reason
//	qa           SQuAD-normalised exact match or token F1 over several golds,
//	             Search-R1's QA reward (extract, metric)
//	ifeval       IFEval-style instructions: counts, keywords, forbidden words,
//	             case, JSON, placeholders, sections, start/end phrases
//
// The Default "svg" has no renderer (type SVG documents the score rule); a
// caller with one registers SVG{Render: …}.New in its own registry.
//
// # Answer slot
//
// math, choice and number read the answer from one place, the answer slot
// (AnswerSlot, docs/spec.md#answer-slot): reasoning up to </think> is
// dropped (a response cut off inside <think> has none); inside the last
// closed <answer> pair, or the whole response, the slot is the last
// \boxed{} group or the sentence after the last answer phrase ("the
// answer is", "final answer:", "the correct option is", "####", or "X is
// the answer"), whichever comes last; failing both, the <answer> content
// or a bare final line (a formula, "Option B", or a sentence that ends
// with its only math environment), or a concluding sentence ("Therefore,
// the total is 42."). A chat template's end-of-turn token (<|im_end|>)
// ends the response. Nothing earns a score without a slot;
// an empty or unclosed <answer>, an unclosed final \boxed{ or boxes that
// disagree are malformed slots and earn 0 — never a fallback to earlier
// text; so is an answer retracted after it ("Actually, …", "Wait, that's
// wrong", "Or …"). The parameter "lenient": true reads a response without
// a slot whole.
//
// Every other verifier that compares with a reference (iou, detection,
// temporal_iou, structured_f1, ocr, answer, html, svg) reads its answer
// under the same rule, in its structured form: the answer region (after
// the reasoning, inside the last <answer>), then its last box group or
// ``` fence, an answer phrase, or the region whole; exactly one candidate
// of the verifier's kind (a box, a detection list, an interval, a
// dictionary, a text without alternatives); nothing after it retracting
// it. docs/spec.md#answer-slot is the one statement of the rule.
//
// # Normalisation
//
// Every built-in verifier normalises response and reference first
// (docs/spec.md#text-normalisation): invisible characters removed, digits
// of every script in ASCII, ½ and x³ written out, NFKC. The format
// verifiers count a section only if it holds visible content; their
// parameter "visible": false gives the papers' exact rules.
//
// # Extraction
//
// The answer a verifier scores comes from the prediction by the "extract"
// parameter: "slot" (the default of every verifier that takes "extract")
// is the answer slot; "auto" (the default of earlier releases) takes the content of the last
// closed <answer>…</answer> (else the whole text), then the content of the
// last \boxed{…} with balanced braces inside it, if any; "code" (html's and
// svg's earlier default) takes the last ``` fenced block instead of \boxed;
// "answer", "boxed" and "none" use one source only. References are used as
// given, trimmed and normalised.
//
// # Definitions
//
// Multiple choice (LLaVA multiple_choice): the slot names exactly one
// option (ReadChoice: "B", "(B)", "B)", "Option B", "the answer is (D)",
// "B is correct") equal to ref's, case-insensitively; a slot naming
// several options ("A, B", "A or B", "(A) (B) (C) (D)") or none scores 0;
// a slot equal to the option text ref gives after its letter ("42" for
// "(B) 42") names that option.
//
// Number (LLaVA number): the slot holds one number (the same value twice
// counts once; a value ruled out, "not 6", does not count; a bound, "at
// least 6", scores 0) equal to the
// last number of ref, exactly as rationals; "tol" > 0 allows |a − b| ≤
// tol·|b| in float64. ReadNumbers documents the notation: Unicode minus,
// thousands groups of exactly three digits (",", "{,}", thin space),
// scientific notation (1.5e3, 1.5 × 10^3), integer powers (2^10 is 1024),
// integer fractions, and "%" as a unit ("50%" is 50).
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
// Every built-in verifier scores a pred over MaxInputBytes (1 MiB) 0 with a
// reason, rejects a ref over it (ErrTooLarge), checks params against
// MaxParams, MaxParamBytes and MaxParamItems before reading them, and
// otherwise works in time linear in the input, except where more is
// inherent: OCR's edit distances share MaxEditCells (4 Mi cells) per call,
// computed in bands that widen only while the distance can still matter
// (a call that runs out scores the targets it compared, with a reason);
// detection is bounded by MaxBoxes (256) boxes per side, SSIM by MaxPixels
// (4 Mi pixels), math by work budgets (steps and big-number word
// operations, deterministic; docs/spec.md#verifier-cost). A call past a
// budget is a verdict of 0 with a reason; a call past its context's
// deadline is a verdict of 0 with Timeout and an error wrapping
// context.DeadlineExceeded. On any input up to 64 KiB, no call takes over 50 ms or allocates
// over 16 MiB (TestWorstCaseCost). No parser
// recurses on its input: \boxed{} nesting of any depth is one linear pass,
// box scanning is linear, and detection JSON goes through encoding/json,
// which rejects nesting beyond 10 000 levels. Numbers of up to
// MaxNumberDigits (4096) digits compare exactly; box coordinates beyond
// float64 make the box unreadable. Invalid UTF-8 counts one character per bad byte.
package verifiers
