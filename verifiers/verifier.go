package verifiers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

// Limits on what a verifier accepts. Model output is untrusted: these keep
// every built-in verifier within milliseconds and a few megabytes whatever
// the text holds.
const (
	// MaxInputBytes bounds pred and ref of every built-in verifier.
	MaxInputBytes = 1 << 20
	// MaxBoxes bounds the boxes of one detection answer or reference.
	MaxBoxes = 256
	// MaxEditCells bounds len(a)·len(b), in runes, of one edit-distance
	// computation (about 10 ms at 1 ns a cell).
	MaxEditCells = 1 << 22
	// MaxPixels bounds the images SSIM compares.
	MaxPixels = 1 << 22
)

// Kinds of failure, in addition to tensor's. Errors wrap them in a
// *tensor.ArgError that names the argument, so callers can branch with
// errors.Is.
var (
	// ErrTooLarge: an input over one of the limits above.
	ErrTooLarge = errors.New("too large")
	// ErrSyntax: a reference (or other trusted input) that does not parse.
	ErrSyntax = errors.New("syntax error")
	// ErrParam: a parameter with the wrong type or an unknown name.
	ErrParam = errors.New("bad parameter")
	// ErrUnknown: a verifier name the registry does not hold.
	ErrUnknown = errors.New("unknown verifier")
)

// Result is what a verifier makes of one prediction.
type Result struct {
	// Score is the reward in [0, 1].
	Score float64
	// Correct says whether the prediction counts as right; each verifier
	// documents its rule (for continuous scores, a threshold).
	Correct bool
	// Parsed is what the verifier extracted from the prediction, "" when it
	// found nothing to score.
	Parsed string
	// Timeout reports a call stopped by its deadline (the context's or the
	// verifier's own budget) before it could decide; Score is 0 then.
	Timeout bool `json:"timeout,omitempty"`
	// Reason says why the score is 0 when the verifier could not read an
	// answer or stopped at a limit: no answer slot, several different
	// answers, a malformed slot, a timeout, an input over a size limit.
	// It is "" for an answer that was read and judged wrong.
	Reason string `json:"reason,omitempty"`
}

// Verifier scores a prediction (model output) against a reference under
// per-sample parameters. Malformed predictions score 0 without an error:
// the model earned nothing. Errors are for what the trainer supplied: a
// reference that does not parse, a bad parameter, input over a limit, or a
// cancelled context. Implementations must be safe for concurrent use.
type Verifier interface {
	Verify(ctx context.Context, pred, ref string, params Params) (Result, error)
}

// Func adapts an ordinary function to the Verifier interface.
type Func func(ctx context.Context, pred, ref string, params Params) (Result, error)

// Verify calls f.
func (f Func) Verify(ctx context.Context, pred, ref string, params Params) (Result, error) {
	return f(ctx, pred, ref, params)
}

// Registry maps verifier names (V-Triune's `verifier` key) to verifiers. The
// zero value is an empty registry ready to use; it is safe for concurrent
// use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Verifier
}

// Register adds v under name. Names are case-sensitive and must be
// non-empty, without spaces; registering a name twice is an error, so two
// packages cannot silently replace each other's verifier.
func (r *Registry) Register(name string, v Verifier) error {
	if name == "" || strings.ContainsFunc(name, func(c rune) bool { return c <= ' ' }) {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(ErrParam, "name", nil, "%q, want a non-empty name without spaces", name))
	}
	if v == nil {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(ErrParam, "v", nil, "nil verifier for %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(ErrParam, "name", nil, "%q is already registered", name))
	}
	if r.m == nil {
		r.m = make(map[string]Verifier)
	}
	r.m[name] = v
	return nil
}

// Lookup returns the verifier registered under name, or an error wrapping
// ErrUnknown that lists the known names.
func (r *Registry) Lookup(name string) (Verifier, error) {
	r.mu.RLock()
	v, ok := r.m[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("verifiers: %w %q (registered: %s)", ErrUnknown, name, strings.Join(r.Names(), ", "))
	}
	return v, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Verify looks name up and runs it, and checks what a verifier from outside
// this package returns: a Score outside [0, 1] or NaN is reported as an
// error rather than passed on to the trainer.
func (r *Registry) Verify(ctx context.Context, name, pred, ref string, params Params) (Result, error) {
	v, err := r.Lookup(name)
	if err != nil {
		return Result{}, err
	}
	res, err := v.Verify(ctx, pred, ref, params)
	if err != nil {
		return Result{}, err
	}
	if !(res.Score >= 0 && res.Score <= 1) {
		return Result{}, fmt.Errorf("verifiers: %s returned score %v, want a number in [0, 1]", name, res.Score)
	}
	return res, nil
}

// Default is the registry the package-level functions use. It holds the
// built-in verifiers under the keys of docs/conformance.md (choice, number, iou,
// detection, ocr, html, format, format_tags), answer, math (package
// mathverify) and svg (without a renderer; see SVG); see the package
// documentation.
var Default = new(Registry)

// Register adds v to the Default registry.
func Register(name string, v Verifier) error { return Default.Register(name, v) }

// Lookup finds name in the Default registry.
func Lookup(name string) (Verifier, error) { return Default.Lookup(name) }

// Names lists the Default registry.
func Names() []string { return Default.Names() }

// rule is the shape every built-in verifier shares: the context and size
// checks, the check for unknown parameters and the extraction of the
// answer run first, then score sees the extracted answer (found is false
// when the extraction mode found none), the reference and the parameters.
type rule struct {
	name string
	// extract is the default extraction mode; "" for verifiers that read
	// the whole response and take no "extract" parameter.
	extract string
	// params are the parameters besides "extract".
	params []string
	score  func(ctx context.Context, ans string, found bool, ref string, p Params) (Result, error)
}

func (r *rule) verify(ctx context.Context, pred, ref string, p Params) (Result, error) {
	if err := p.checkSize(); err != nil {
		return Result{}, wrap(r.name, err)
	}
	if reason, err := checkInputs(ctx, pred, ref); err != nil || reason != "" {
		return Result{Reason: reason, Timeout: strings.HasPrefix(reason, "timeout")}, wrap(r.name, err)
	}
	if len(p) > 0 {
		known := r.params
		if r.extract != "" {
			known = append(known[:len(known):len(known)], "extract", "lenient")
		}
		if err := p.Only(known...); err != nil {
			return Result{}, wrap(r.name, err)
		}
	}
	ans, found := pred, true
	if r.extract != "" {
		var err error
		if ans, found, err = extractParam(pred, p, r.extract); err != nil {
			return Result{}, wrap(r.name, err)
		}
	}
	res, err := r.score(ctx, ans, found, ref, p)
	if err != nil {
		if res, err := deadlineResult(err); err == nil {
			return res, nil
		}
		return Result{}, wrap(r.name, err)
	}
	if !found && res.Reason == "" {
		res.Reason = "no answer found"
		if mode, _ := p.String("extract", r.extract); mode == ExtractSlot {
			lenient, _ := p.Bool("lenient", false)
			_, res.Reason = AnswerSlot(pred, lenient)
		}
	}
	return res, nil
}

// checkInputs is the common preamble of the built-in verifiers. A ref
// over the limit is the trainer's error; a pred over it is model output
// that earns 0, with a reason.
func checkInputs(ctx context.Context, pred, ref string) (reason string, err error) {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "timeout: " + err.Error(), nil
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

// wrap prefixes an error of the built-in verifier name.
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
