package verifiers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/kinds"
	"github.com/rlpost/rlpost/verifiers/mathverify"
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

// Kinds of failure, in addition to tensor's. Errors about inputs wrap
// them in a *tensor.ArgError that names the argument, so callers can branch
// with errors.Is and errors.As. Package mathverify shares them: its ErrParam
// and ErrSyntax are these.
var (
	// ErrTooLarge: an input over one of the limits above.
	ErrTooLarge = kinds.ErrTooLarge
	// ErrSyntax: a reference (or other trusted input) that does not parse.
	ErrSyntax = kinds.ErrSyntax
	// ErrParam: a parameter with the wrong type, an unknown name or a value
	// outside its domain.
	ErrParam = kinds.ErrParam
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

// Verifier scores a response (model output) against a reference (the
// trusted answer), in that order: the JSON contract's "pred" and "gold"
// (docs/spec.md#rewards-and-verifiers). A Verifier has its parameters
// already: New builds one from a verifier name and V-Triune's per-sample
// parameters, reading and checking them once, so Verify reads none.
//
// A malformed response scores 0 without an error: the model earned
// nothing, and Result.Reason says why. Errors are for what the trainer
// supplied: a reference that does not parse (ErrSyntax), input over a
// limit (ErrTooLarge), or a cancelled context (wrapping context.Canceled).
// Implementations must be safe for concurrent use.
type Verifier interface {
	Verify(ctx context.Context, response, reference string) (Result, error)
}

// Func adapts an ordinary function to the Verifier interface.
type Func func(ctx context.Context, response, reference string) (Result, error)

// Verify calls f.
func (f Func) Verify(ctx context.Context, response, reference string) (Result, error) {
	return f(ctx, response, reference)
}

// Factory builds a Verifier from per-sample parameters, reading and
// checking them once. An unknown, misspelt or out-of-range parameter is a
// *tensor.ArgError wrapping ErrParam that names it (params["tol"]). A
// Registry holds one Factory per verifier name.
type Factory func(params Params) (Verifier, error)

// WithoutParams is the Factory of a verifier that takes no parameters: it
// returns v for empty params and an error wrapping ErrParam otherwise.
func WithoutParams(v Verifier) Factory {
	return func(p Params) (Verifier, error) {
		if err := p.Only(); err != nil {
			return nil, fmt.Errorf("verifiers: %w", err)
		}
		return v, nil
	}
}

// ParamVerifier is the Verifier interface of earlier releases, which read
// its parameters on every call.
//
// Deprecated: implement Verifier and register a Factory; Adapt turns a
// ParamVerifier into one. ParamVerifier is kept for one release.
type ParamVerifier interface {
	Verify(ctx context.Context, response, reference string, params Params) (Result, error)
}

// ParamFunc is the Func of earlier releases, with per-call parameters.
//
// Deprecated: use Func and a Factory (see Adapt). ParamFunc is kept for one
// release.
type ParamFunc func(ctx context.Context, response, reference string, params Params) (Result, error)

// Verify calls f.
func (f ParamFunc) Verify(ctx context.Context, response, reference string, params Params) (Result, error) {
	return f(ctx, response, reference, params)
}

// Adapt is the Factory of a verifier written against the interface of
// earlier releases: the Verifier it builds passes the parameters it was
// built with on every call, unchecked until then.
func Adapt(v ParamVerifier) Factory {
	return func(p Params) (Verifier, error) {
		return Func(func(ctx context.Context, response, reference string) (Result, error) {
			return v.Verify(ctx, response, reference, p)
		}), nil
	}
}

// Registry maps verifier names (V-Triune's `verifier` key) to factories.
// The zero value is an empty registry ready to use; it is safe for
// concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Factory

	// cache holds the verifiers Verify built, keyed by name and
	// parameters (appendCacheKey), so that a batch that repeats them reads
	// them once.
	cacheMu sync.Mutex
	cache   map[string]Verifier
}

// Bounds of the cache of built verifiers: the parameters of a training
// batch take a handful of distinct values, so a full cache means unusual
// traffic; it is then emptied rather than grown. Parameters whose key
// would be longer are not cached.
const (
	maxCached         = 1024
	maxCachedKeyBytes = 512
)

// Register adds the factory f under name. Names are case-sensitive and
// must be non-empty, without spaces; registering a name twice is an error,
// so two packages cannot silently replace each other's verifier.
func (r *Registry) Register(name string, f Factory) error {
	if name == "" || strings.ContainsFunc(name, func(c rune) bool { return c <= ' ' }) {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(ErrParam, "name", nil, "%q, want a non-empty name without spaces", name))
	}
	if f == nil {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(ErrParam, "f", nil, "nil factory for %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("verifiers: %w", tensor.Errorf(ErrParam, "name", nil, "%q is already registered", name))
	}
	if r.m == nil {
		r.m = make(map[string]Factory)
	}
	r.m[name] = f
	return nil
}

// Factory returns the factory registered under name, or an error wrapping
// ErrUnknown that lists the known names (its text, `verifiers: unknown
// verifier "x" (registered: …)`, is part of the serve and verify JSON
// contracts).
func (r *Registry) Factory(name string) (Factory, error) {
	r.mu.RLock()
	f, ok := r.m[name]
	r.mu.RUnlock()
	if !ok {
		known := strings.Join(r.Names(), ", ")
		if known == "" {
			known = "none"
		}
		return nil, fmt.Errorf("verifiers: %w %q (registered: %s)", ErrUnknown, name, known)
	}
	return f, nil
}

// New builds the verifier registered under name with params, which it
// reads and checks once. The Verifier it returns also checks what a
// verifier from outside this package returns: a Score outside [0, 1] or
// NaN is an error rather than a reward passed on to the trainer.
func (r *Registry) New(name string, params Params) (Verifier, error) {
	f, err := r.Factory(name)
	if err != nil {
		return nil, err
	}
	v, err := f(params)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("verifiers: %s: %w", name, tensor.Errorf(ErrParam, "f", nil, "the factory returned no verifier and no error"))
	}
	if _, ok := v.(*builtin); ok {
		return v, nil // scores are clamped to [0, 1] already
	}
	return checked{name: name, v: v}, nil
}

// checked guards a verifier from outside this package.
type checked struct {
	name string
	v    Verifier
}

func (c checked) Verify(ctx context.Context, response, reference string) (Result, error) {
	res, err := c.v.Verify(ctx, response, reference)
	if err != nil {
		return Result{}, err
	}
	if !(res.Score >= 0 && res.Score <= 1) {
		return Result{}, fmt.Errorf("verifiers: %s: returned score %v, want a number in [0, 1]", c.name, res.Score)
	}
	return res, nil
}

// Lookup returns the verifier registered under name in the interface of
// earlier releases, or an error wrapping ErrUnknown.
//
// Deprecated: use New(name, params), which reads the parameters once, and
// Factory to check that a name is registered. Lookup is kept for one
// release.
func (r *Registry) Lookup(name string) (ParamVerifier, error) {
	if _, err := r.Factory(name); err != nil {
		return nil, err
	}
	return ParamFunc(func(ctx context.Context, response, reference string, p Params) (Result, error) {
		return r.Verify(ctx, name, response, reference, p)
	}), nil
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

// Verify scores one response with the verifier name built with params: the
// entry point of `rlpost verify` and `rlpost serve`, where every sample
// names its verifier and parameters. The verifiers it builds are cached by
// name and parameters (up to 1024 of them; parameters up to 16 keys of
// scalars or arrays of them, about 512 bytes in all), so a batch that
// repeats them reads them once, and a cache hit allocates nothing.
func (r *Registry) Verify(ctx context.Context, name, response, reference string, params Params) (Result, error) {
	v, err := r.cached(name, params)
	if err != nil {
		return Result{}, err
	}
	return v.Verify(ctx, response, reference)
}

// cached returns the verifier for name and params, building it on a miss.
// Parameters that do not build are not cached: each call reports them. A
// hit allocates nothing: the key is written into a buffer on the stack and
// looked up without converting it to a string.
func (r *Registry) cached(name string, params Params) (Verifier, error) {
	var buf [maxCachedKeyBytes]byte
	key, ok := appendCacheKey(buf[:0], name, params)
	if !ok {
		return r.New(name, params)
	}
	r.cacheMu.Lock()
	v, hit := r.cache[string(key)]
	r.cacheMu.Unlock()
	if hit {
		return v, nil
	}
	v, err := r.New(name, params)
	if err != nil {
		return nil, err
	}
	r.cacheMu.Lock()
	if r.cache == nil || len(r.cache) >= maxCached {
		r.cache = make(map[string]Verifier)
	}
	r.cache[string(key)] = v
	r.cacheMu.Unlock()
	return v, nil
}

// maxCachedKeys bounds the parameters of a cached verifier; more are rare
// enough to build each time.
const maxCachedKeys = 16

// appendCacheKey appends name and params to dst in a canonical form (keys
// sorted, values typed), and reports false when they do not fit a key:
// too many parameters, a key or value too long, or a value other than a
// number, boolean, string, null or array of those.
func appendCacheKey(dst []byte, name string, params Params) ([]byte, bool) {
	if len(params) > maxCachedKeys {
		return nil, false
	}
	var keys [maxCachedKeys]string
	n := 0
	for k := range params {
		keys[n] = k
		n++
	}
	for i := 1; i < n; i++ { // insertion sort: a handful of keys
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	dst = appendKeyString(dst, name)
	for _, k := range keys[:n] {
		dst = appendKeyString(dst, k)
		var ok bool
		if dst, ok = appendKeyValue(dst, params[k]); !ok {
			return nil, false
		}
	}
	return dst, len(dst) <= maxCachedKeyBytes
}

// appendKeyString appends s with its length, so that no two sequences of
// strings write the same bytes.
func appendKeyString(dst []byte, s string) []byte {
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, ':')
	return append(dst, s...)
}

// appendKeyValue appends a parameter value with a tag for its type: the
// built-in verifiers read 1 and 1.0 alike, but a caller's Factory may not.
func appendKeyValue(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, 'z'), true
	case bool:
		if x {
			return append(dst, 't'), true
		}
		return append(dst, 'f'), true
	case string:
		if len(x) > maxCachedKeyBytes {
			return nil, false
		}
		return appendKeyString(append(dst, 's'), x), true
	case float64:
		return strconv.AppendFloat(append(dst, 'd'), x, 'g', -1, 64), true
	case float32:
		return strconv.AppendFloat(append(dst, 'e'), float64(x), 'g', -1, 32), true
	case int:
		return strconv.AppendInt(append(dst, 'i'), int64(x), 10), true
	case int64:
		return strconv.AppendInt(append(dst, 'l'), x, 10), true
	case json.Number:
		return appendKeyString(append(dst, 'n'), string(x)), true
	case []any:
		if len(x) > MaxParamItems {
			return nil, false
		}
		dst = strconv.AppendInt(append(dst, '['), int64(len(x)), 10)
		for _, e := range x {
			if _, nested := e.([]any); nested {
				return nil, false
			}
			var ok bool
			if dst, ok = appendKeyValue(dst, e); !ok {
				return nil, false
			}
		}
		return dst, true
	case []string:
		if len(x) > MaxParamItems {
			return nil, false
		}
		dst = strconv.AppendInt(append(dst, 'S'), int64(len(x)), 10)
		for _, e := range x {
			if len(e) > maxCachedKeyBytes {
				return nil, false
			}
			dst = appendKeyString(dst, e)
		}
		return dst, true
	}
	return nil, false
}

// Default is the registry the package-level functions use. It holds the
// built-in verifiers under the keys of docs/conformance.md (choice, number,
// iou, detection, ocr, html, format, format_tags), answer, math (package
// mathverify, registered like every other), svg (without a renderer; see
// SVG) and the verifiers of the papers' recipes; see the package
// documentation.
var Default = new(Registry)

// New builds the verifier name of the Default registry with params.
func New(name string, params Params) (Verifier, error) { return Default.New(name, params) }

// Register adds f to the Default registry.
func Register(name string, f Factory) error { return Default.Register(name, f) }

// Lookup finds name in the Default registry.
//
// Deprecated: use New(name, params). Lookup is kept for one release.
func Lookup(name string) (ParamVerifier, error) { return Default.Lookup(name) }

// Names lists the Default registry.
func Names() []string { return Default.Names() }

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
}

// config holds the parameters of a built-in verifier as read by compile;
// each verifier uses its own fields.
type config struct {
	extract    string // extraction mode, "" for the whole response
	lenient    bool   // "lenient": a response without a slot is read whole
	ignoreCase bool   // "ignore_case" (answer, ocr)
	tol        float64
	threshold  float64 // iou's ε, temporal_iou's and structured_f1's bar
	pass       float64 // html, svg
	maxRatio   float64 // think_boxed_format
	style      string  // vagen_format
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
			known = append(known[:len(known):len(known)], "extract", "lenient")
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
		if mode == ExtractSlot {
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
	ans, found, slotReason := response, true, ""
	switch b.c.extract {
	case "":
	case ExtractSlot:
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
