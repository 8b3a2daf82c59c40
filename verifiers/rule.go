package verifiers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/norm"
	"github.com/rlpost/rlpost/verifiers/mathverify"
)

// rule is the shape every built-in verifier shares. compile reads the
// parameters once: their size, the unknown keys, the extraction mode and
// then the verifier's own (read). The built verifier's Verify runs the
// context and size checks and the extraction, then score sees the
// extracted answer (found is false when the extraction mode found none),
// the reference and the parameters as read.
type rule struct {
	name string
	// extract is the default extraction mode; "" for verifiers that read
	// the whole response and take no "extract" parameter.
	extract string
	// params are the parameters besides "extract" and "lenient".
	params []string
	// ownKeys says that read checks the keys itself (math: mathverify's
	// ParseOptions knows its keys).
	ownKeys bool
	// read reads params into c; nil for a verifier without parameters of
	// its own.
	read  func(p Params, c *config) error
	score func(ctx context.Context, ans string, found bool, ref string, c *config) (Result, error)
	// region marks a verifier whose answers are not short values: in
	// extract mode "slot" it reads its answer with readRegion, of the
	// given shape (has accepts an answer phrase's value), and takes no
	// "lenient" (its region is read whole when nothing narrows it).
	region bool
	shape  slotShape
	has    func(string) bool
	// norm is how response and reference are normalised before any rule
	// reads them (package norm; docs/spec.md#text-normalisation).
	norm normMode
}

// normMode selects the normalisation of a rule's inputs.
type normMode uint8

const (
	normFull  normMode = iota // norm.Text: invisible characters, digits, fractions, scripts, NFKC
	normNFC                   // norm.TextNFC: invisible characters, then NFC (text compared as written)
	normClean                 // norm.Clean: invisible characters only (code)
	normNone                  // the rule normalises itself (the format verifiers)
)

func (m normMode) apply(s string) string {
	switch m {
	case normFull:
		return norm.Text(s)
	case normNFC:
		return norm.TextNFC(s)
	case normClean:
		return norm.Clean(s)
	}
	return s
}

// config holds the parameters of a built-in verifier as read by compile;
// each verifier uses its own fields.
type config struct {
	extract    string // extraction mode, "" for the whole response
	lenient    bool   // "lenient": a response without a slot is read whole
	ignoreCase bool   // "ignore_case" (answer, ocr)
	tol        float64
	threshold  float64  // iou's ε, temporal_iou's and structured_f1's bar
	pass       float64  // html, svg
	maxRatio   float64  // think_boxed_format
	style      string   // vagen_format's style, qa's metric
	visible    bool     // the format verifiers' "visible": sections need visible content
	options    []string // choice's option texts, normalised, A first
	ifeval     *ifevalConfig
	detection  DetectionConfig
	math       *mathverify.Verifier
}

// builtin is a built-in verifier with its parameters read.
type builtin struct {
	r *rule
	c config
}

// New reads p and returns the verifier; it is the rule's Factory.
func (r *rule) New(p Params) (Verifier, error) {
	b, err := r.compile(p)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (r *rule) compile(p Params) (*builtin, error) {
	if err := p.checkSize(); err != nil {
		return nil, wrap(r.name, err)
	}
	if !r.ownKeys {
		known := r.params
		if r.extract != "" {
			known = append(known[:len(known):len(known)], "extract")
			if !r.region {
				known = append(known, "lenient")
			}
		}
		if err := p.Only(known...); err != nil {
			return nil, wrap(r.name, err)
		}
	}
	b := &builtin{r: r}
	if r.extract != "" {
		mode, err := p.Enum("extract", r.extract, extractModes...)
		if err != nil {
			return nil, wrap(r.name, err)
		}
		b.c.extract = mode
		if mode == ExtractSlot && !r.region {
			if b.c.lenient, err = p.Bool("lenient", false); err != nil {
				return nil, wrap(r.name, err)
			}
		} else if _, ok := p["lenient"]; ok {
			return nil, wrap(r.name, paramErr("lenient", "only with extract \"slot\""))
		}
	}
	if r.read != nil {
		if err := r.read(p, &b.c); err != nil {
			return nil, wrap(r.name, err)
		}
	}
	return b, nil
}

// verify is the one-call form of the package functions (Number, Choice,
// …): compile, then Verify.
func (r *rule) verify(ctx context.Context, response, reference string, p Params) (Result, error) {
	b, err := r.compile(p)
	if err != nil {
		return Result{}, err
	}
	return b.Verify(ctx, response, reference)
}

// Verify implements Verifier.
func (b *builtin) Verify(ctx context.Context, response, reference string) (Result, error) {
	if reason, err := checkInputs(ctx, response, reference); err != nil || reason != "" {
		return Result{Reason: reason, Timeout: strings.HasPrefix(reason, "timeout")}, wrap(b.r.name, err)
	}
	res, err := b.verify(ctx, response, reference)
	if res.Timeout && err == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// Stopped by the caller's deadline, not by the verifier's own
		// budget: the sample was not judged, which a trainer must not
		// read as a reward of 0 (docs: "A call past its context's
		// deadline").
		err = wrap(b.r.name, ctx.Err())
	}
	if strings.HasPrefix(res.Reason, "several different") {
		// A hedge has no one answer: showing the last candidate would
		// read as the answer that was judged wrong.
		res.Parsed = ""
	}
	return res, err
}

func (b *builtin) verify(ctx context.Context, response, reference string) (Result, error) {
	response, reference = b.r.norm.apply(response), b.r.norm.apply(reference)
	// NFKC may lengthen a text (ﷺ is 18 characters): the limits hold for
	// what the rules read.
	if len(reference) > MaxInputBytes {
		return Result{}, wrap(b.r.name, tensor.Errorf(ErrTooLarge, "ref", nil, "%d bytes after normalisation, limit %d", len(reference), MaxInputBytes))
	}
	if len(response) > MaxInputBytes {
		return Result{Reason: fmt.Sprintf("limit: pred is %d bytes after normalisation, over %d", len(response), MaxInputBytes)}, nil
	}
	ans, found, slotReason := response, true, ""
	switch b.c.extract {
	case "":
	case ExtractSlot:
		if b.r.region {
			var ra regionAnswer
			ra, slotReason = readRegion(response, b.r.shape, b.r.has)
			ans, found = ra.text, slotReason == ""
			break
		}
		ans, slotReason = AnswerSlot(response, b.c.lenient)
		found = slotReason == ""
	default:
		ans, found = Extract(response, b.c.extract)
	}
	res, err := b.r.score(ctx, ans, found, reference, &b.c)
	if err != nil {
		if res, err := deadlineResult(err); err == nil {
			return res, nil
		}
		return Result{}, wrap(b.r.name, err)
	}
	if !found && res.Reason == "" {
		res.Reason = "no answer found"
		if slotReason != "" {
			res.Reason = slotReason
		}
	}
	return res, nil
}

// floatIn reads the number under key (default def) and checks that it lies
// in [lo, hi] (lo excluded when open).
func floatIn(p Params, key string, def, lo, hi float64, open bool) (float64, error) {
	x, err := p.Float(key, def)
	if err != nil {
		return 0, err
	}
	if x > hi || x < lo || open && x == lo {
		l := "["
		if open {
			l = "("
		}
		return 0, paramErr(key, "%v, want a number in %s%v, %v]", x, l, lo, hi)
	}
	return x, nil
}

// checkInputs is the common preamble of the built-in verifiers. A ref
// over the limit is the trainer's error; a pred over it is model output
// that earns 0, with a reason.
func checkInputs(ctx context.Context, pred, ref string) (reason string, err error) {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "timeout: " + err.Error(), err
		}
		return "", err
	}
	if len(ref) > MaxInputBytes {
		return "", tensor.Errorf(ErrTooLarge, "ref", nil, "%d bytes, limit %d", len(ref), MaxInputBytes)
	}
	if len(pred) > MaxInputBytes {
		return fmt.Sprintf("limit: pred is %d bytes, over %d", len(pred), MaxInputBytes), nil
	}
	return "", nil
}

// deadlineResult turns an expired deadline into a verdict: score 0 with
// Timeout and a reason. Other errors (a cancelled context among them) stay
// errors.
func deadlineResult(err error) (Result, error) {
	if errors.Is(err, context.DeadlineExceeded) {
		return Result{Timeout: true, Reason: "timeout: " + err.Error()}, nil
	}
	return Result{}, err
}

// wrap prefixes an error of the built-in verifier name: every error of
// this package reads "verifiers: name: …", a cancelled context included
// ("verifiers: math: context canceled").
func wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("verifiers: %s: %w", name, err)
}

// clamp01 keeps rounding from pushing a score out of [0, 1].
func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(max(x, 0), 1)
}
