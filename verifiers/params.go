package verifiers

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rlpost/rlpost/tensor"
)

// Params are a verifier's per-sample parameters, V-Triune's verifier_parm
// (Fig. 8): a JSON object decoded into map[string]any, or built in Go. The
// getters accept what encoding/json produces (float64, bool, string,
// json.Number) and Go's numeric types, and return an error wrapping ErrParam
// that names the key when the value has the wrong type. A nil Params is
// empty.
type Params map[string]any

func paramErr(key, format string, a ...any) error {
	return tensor.Errorf(ErrParam, fmt.Sprintf("params[%q]", key), nil, format, a...)
}

// Float returns the finite number under key, or def when the key is absent
// or null.
func (p Params) Float(key string, def float64) (float64, error) {
	v, ok := p[key]
	if !ok || v == nil {
		return def, nil
	}
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case float32:
		x = float64(n)
	case int:
		x = float64(n)
	case int32:
		x = float64(n)
	case int64:
		x = float64(n)
	case uint:
		x = float64(n)
	case uint32:
		x = float64(n)
	case uint64:
		x = float64(n)
	case json.Number:
		f, err := n.Float64()
		if err != nil {
			return 0, paramErr(key, "%q is not a number", string(n))
		}
		x = f
	default:
		return 0, paramErr(key, "%s, want a number", describe(v))
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, paramErr(key, "%v, want a finite number", x)
	}
	return x, nil
}

// Int returns the integer under key, or def when absent or null. A float
// must hold an integral value.
func (p Params) Int(key string, def int) (int, error) {
	if v, ok := p[key]; !ok || v == nil {
		return def, nil
	}
	x, err := p.Float(key, 0)
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, paramErr(key, "%v, want an integer", x)
	}
	return int(x), nil
}

// Bool returns the boolean under key, or def when absent or null.
func (p Params) Bool(key string, def bool) (bool, error) {
	v, ok := p[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, paramErr(key, "%s, want true or false", describe(v))
	}
	return b, nil
}

// String returns the string under key, or def when absent or null.
func (p Params) String(key, def string) (string, error) {
	v, ok := p[key]
	if !ok || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", paramErr(key, "%s, want a string", describe(v))
	}
	return s, nil
}

// Strings returns the array of strings under key (a []any of strings, as
// encoding/json decodes it, or a []string), or nil when absent or null.
func (p Params) Strings(key string) ([]string, error) {
	v, ok := p[key]
	if !ok || v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, paramErr(key, "element %d is %s, want a string", i, describe(e))
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, paramErr(key, "%s, want an array of strings", describe(v))
}

// Enum returns the string under key, which must be one of allowed, or def
// when absent or null.
func (p Params) Enum(key, def string, allowed ...string) (string, error) {
	s, err := p.String(key, def)
	if err != nil {
		return "", err
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", paramErr(key, "%q, want one of %s", s, strings.Join(allowed, ", "))
}

// Only reports the first key of p (in sorted order) that is not in known.
// The built-in verifiers call it so a misspelt parameter is an error rather
// than a silently ignored default.
func (p Params) Only(known ...string) error {
	if len(p) == 0 {
		return nil
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
next:
	for _, k := range keys {
		for _, kk := range known {
			if k == kk {
				continue next
			}
		}
		if len(known) == 0 {
			return paramErr(k, "unknown parameter; this verifier takes none")
		}
		return paramErr(k, "unknown parameter; known: %s", strings.Join(known, ", "))
	}
	return nil
}

// describe names a value's JSON type for error messages without printing
// the value, which may be large.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case float64, json.Number:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// Size limits on Params, checked before any parameter is read: parameters
// come from per-sample metadata and are small, so anything larger is a
// mistake or an attack, and is refused before it costs anything.
const (
	// MaxParams bounds the number of keys.
	MaxParams = 32
	// MaxParamBytes bounds a string value, and the strings of an array.
	MaxParamBytes = 4096
	// MaxParamItems bounds the elements of an array value.
	MaxParamItems = 64
)

// checkSize reports the first key over the size limits, as an error
// wrapping ErrTooLarge.
func (p Params) checkSize() error {
	if len(p) > MaxParams {
		return tensor.Errorf(ErrTooLarge, "params", nil, "%d keys, limit %d", len(p), MaxParams)
	}
	for k, v := range p {
		if len(k) > MaxParamBytes {
			return tensor.Errorf(ErrTooLarge, "params", nil, "a key of %d bytes, limit %d", len(k), MaxParamBytes)
		}
		if err := valueSize(k, v); err != nil {
			return err
		}
	}
	return nil
}

func valueSize(k string, v any) error {
	switch x := v.(type) {
	case string:
		if len(x) > MaxParamBytes {
			return tensor.Errorf(ErrTooLarge, fmt.Sprintf("params[%q]", k), nil, "%d bytes, limit %d", len(x), MaxParamBytes)
		}
	case []any:
		if len(x) > MaxParamItems {
			return tensor.Errorf(ErrTooLarge, fmt.Sprintf("params[%q]", k), nil, "%d elements, limit %d", len(x), MaxParamItems)
		}
		for _, e := range x {
			switch e.(type) {
			case []any, map[string]any:
				return paramErr(k, "nested arrays and objects are not parameters")
			}
			if err := valueSize(k, e); err != nil {
				return err
			}
		}
	case []string:
		if len(x) > MaxParamItems {
			return tensor.Errorf(ErrTooLarge, fmt.Sprintf("params[%q]", k), nil, "%d elements, limit %d", len(x), MaxParamItems)
		}
		for _, e := range x {
			if err := valueSize(k, e); err != nil {
				return err
			}
		}
	case map[string]any:
		return paramErr(k, "an object is not a parameter")
	}
	return nil
}
