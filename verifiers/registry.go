package verifiers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

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
