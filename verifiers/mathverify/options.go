package mathverify

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/kinds"
)

// Kinds of failure, in addition to tensor's; they are package verifiers'
// kinds of the same names, so errors.Is finds them whichever package
// returned the error.
var (
	// ErrParam: a ParseOptions key that is unknown, of the wrong type or
	// out of its range (then the error also wraps tensor.ErrRange).
	ErrParam = kinds.ErrParam
	// ErrSyntax: a reference that does not parse.
	ErrSyntax = kinds.ErrSyntax
)

// errParamRange is the kind of a parameter whose value is out of its
// domain: errors.Is finds both ErrParam and tensor.ErrRange in it.
var errParamRange = fmt.Errorf("%w: %w", ErrParam, tensor.ErrRange)

// MatchType selects the kinds of answer text that extraction looks for. The
// values combine with |.
type MatchType uint8

const (
	// MatchLatex finds \boxed{…} and \fbox{…}, math environments ($…$,
	// $$…$$, \(…\), \[…\]) and the LaTeX value after an answer phrase.
	MatchLatex MatchType = 1 << iota
	// MatchExpr finds plain-text numbers and arithmetic ("1,000.5", "2/3",
	// "28 percent") anywhere in the text and after an answer phrase.
	MatchExpr
	// MatchChoice finds a multiple-choice letter among Options.Choices
	// ("The answer is (C)", "B. because …", a lone "D").
	MatchChoice
)

// Options configures Verify. Build them with DefaultOptions or
// ParseOptions; the zero value is not valid.
type Options struct {
	// Precision is the number of decimal places to which a number written
	// with a decimal point (0.333, 4.5e-3) must agree with the other side:
	// |a − b| ≤ ½·10^−Precision, measured from the first significant
	// decade for |x| < 0.1. Math-Verify's float_rounding; default 6.
	Precision int
	// Strict compares variables by name, so f(x) ≠ f(y). Without it the
	// pred's free variables are renamed to the gold's (both sorted by name)
	// when the two have the same number. Math-Verify's strict; default true.
	Strict bool
	// AllowSetRelationComp lets a gold written as a set (x ∈ [−2, 7])
	// match a pred written as a relation (−2 ≤ x ≤ 7). The reverse, a gold
	// relation against a pred set, is always allowed. Default false.
	AllowSetRelationComp bool
	// Match selects the extraction targets; default MatchLatex|MatchExpr.
	Match MatchType
	// BoxedPriority ranks \boxed answers among the answer phrases
	// (0 = with "final answer is", the strongest; 50 = after them); −1
	// turns \boxed extraction off. Default 0.
	BoxedPriority int
	// Choices are the letters MatchChoice accepts; default "ABCDE".
	Choices string
	// MaxInputLen bounds the length of gold and of pred in bytes; longer
	// input is an error. Default 1 MiB.
	MaxInputLen int
	// MaxDepth bounds the nesting of brackets, groups and operators in one
	// answer. Default 64.
	MaxDepth int
	// MaxExponent is the largest |n| for which x^n is computed exactly;
	// larger powers are evaluated in floating point. Default 10000.
	MaxExponent int
	// MaxFactorial is the largest n for which n! and binomials are
	// computed. Default 1000.
	MaxFactorial int
	// Lenient turns the answer-slot rule off: the pred is read as
	// Math-Verify reads it, boxes and answer phrases first, else the last
	// number or formula anywhere. By default (false) the pred's answer is
	// read from its answer slot only (doc.go, "Answer slot"), and a pred
	// without one, or with several answers in it, is not correct.
	Lenient bool
	// Timeout bounds one Verify call in addition to the context's own
	// deadline; 0 means none. It is a last resort: every call is bounded
	// by its work first (doc.go, "Limits"), so that the verdict does not
	// depend on the machine's load, and WallTimeouts counts the calls it
	// stopped. A call that reaches it is a verdict of 0 with
	// Result.Timeout set, not an error. A call that has done little work
	// when it passes the budget (under 256 steps) was descheduled rather
	// than expensive, and gets four times the budget. Default 1 s.
	Timeout time.Duration
}

// DefaultOptions returns the settings of Math-Verify's verify() with LaTeX
// and plain-expression extraction, boxed answers ranked first.
func DefaultOptions() Options {
	return Options{
		Precision:     6,
		Strict:        true,
		Match:         MatchLatex | MatchExpr,
		BoxedPriority: 0,
		Choices:       "ABCDE",
		MaxInputLen:   1 << 20,
		MaxDepth:      64,
		MaxExponent:   10000,
		MaxFactorial:  1000,
		Timeout:       time.Second,
	}
}

// Limits on the limits, so that a configuration cannot ask for unbounded
// work.
const (
	maxPrecision    = 15
	maxMaxDepth     = 1000
	maxMaxExponent  = 1 << 20
	maxMaxFactorial = 100000
)

// Validate reports the first field of o that is out of its domain.
func (o Options) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("mathverify: %w", tensor.Errorf(tensor.ErrRange, "Options."+field, nil, format, a...))
	}
	switch {
	case o.Precision < 0 || o.Precision > maxPrecision:
		return bad("Precision", "%d, want 0…%d", o.Precision, maxPrecision)
	case o.Match == 0 || o.Match&^(MatchLatex|MatchExpr|MatchChoice) != 0:
		return bad("Match", "%#x, want a non-empty combination of MatchLatex, MatchExpr, MatchChoice", uint8(o.Match))
	case o.BoxedPriority < -1 || o.BoxedPriority > 1000:
		return bad("BoxedPriority", "%d, want −1…1000", o.BoxedPriority)
	case o.Match&MatchChoice != 0 && !validChoices(o.Choices):
		return bad("Choices", "%q, want distinct ASCII letters", o.Choices)
	case o.MaxInputLen < 1:
		return bad("MaxInputLen", "%d, want ≥ 1", o.MaxInputLen)
	case o.MaxDepth < 4 || o.MaxDepth > maxMaxDepth:
		return bad("MaxDepth", "%d, want 4…%d", o.MaxDepth, maxMaxDepth)
	case o.MaxExponent < 1 || o.MaxExponent > maxMaxExponent:
		return bad("MaxExponent", "%d, want 1…%d", o.MaxExponent, maxMaxExponent)
	case o.MaxFactorial < 1 || o.MaxFactorial > maxMaxFactorial:
		return bad("MaxFactorial", "%d, want 1…%d", o.MaxFactorial, maxMaxFactorial)
	case o.Timeout < 0:
		return bad("Timeout", "%v, want ≥ 0", o.Timeout)
	}
	return nil
}

func validChoices(s string) bool {
	if s == "" {
		return false
	}
	seen := 0
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
		if seen&(1<<(c-'a')) != 0 {
			return false
		}
		seen |= 1 << (c - 'a')
	}
	return true
}

// ParseOptions builds Options from the params object of an `rlpost verify`
// line, starting from DefaultOptions. Keys (all optional):
//
//	precision                int    decimal places for decimal numbers (Precision)
//	strict                   bool   variables compared by name (Strict)
//	allow_set_relation_comp  bool   gold set may match pred relation (AllowSetRelationComp)
//	match_types              [str]  any of "latex", "expr", "choice" (Match)
//	boxed_priority           int    rank of \boxed answers, −1 = off (BoxedPriority)
//	choices                  str    letters for "choice", e.g. "ABCD" (Choices)
//	max_input_len            int    bytes (MaxInputLen)
//	max_depth                int    (MaxDepth)
//	max_exponent             int    (MaxExponent)
//	max_factorial            int    (MaxFactorial)
//	lenient                  bool   read a pred without an answer slot whole (Lenient)
//	timeout_ms               number milliseconds, 0 = no limit of its own (Timeout)
//
// Numbers may arrive as float64 (encoding/json) or as Go integers; integer
// keys reject fractions. An unknown key, a value of the wrong type or an
// out-of-range value is a *tensor.ArgError naming the key
// (params["precision"]) and wrapping ErrParam; an out-of-range value wraps
// tensor.ErrRange as well.
func ParseOptions(params map[string]any) (Options, error) {
	o := DefaultOptions()
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the same error whatever the map order
	for _, k := range keys {
		v := params[k]
		var err error
		switch k {
		case "precision":
			o.Precision, err = intParam(k, v)
		case "strict":
			o.Strict, err = boolParam(k, v)
		case "allow_set_relation_comp":
			o.AllowSetRelationComp, err = boolParam(k, v)
		case "match_types":
			o.Match, err = matchParam(k, v)
		case "boxed_priority":
			o.BoxedPriority, err = intParam(k, v)
		case "choices":
			s, ok := v.(string)
			if !ok {
				err = paramErr(k, "%T, want a string of letters", v)
			}
			o.Choices = s
		case "max_input_len":
			o.MaxInputLen, err = intParam(k, v)
		case "max_depth":
			o.MaxDepth, err = intParam(k, v)
		case "max_exponent":
			o.MaxExponent, err = intParam(k, v)
		case "max_factorial":
			o.MaxFactorial, err = intParam(k, v)
		case "lenient":
			o.Lenient, err = boolParam(k, v)
		case "timeout_ms":
			var ms float64
			ms, err = numParam(k, v)
			if err == nil && (ms < 0 || ms > 1e9) {
				err = rangeErr(k, "%v, want 0…1e9", ms)
			}
			o.Timeout = time.Duration(ms * float64(time.Millisecond))
		default:
			err = paramErr(k, "unknown key; known: %s", strings.Join(paramKeys, ", "))
		}
		if err != nil {
			return Options{}, err
		}
	}
	if err := o.Validate(); err != nil {
		return Options{}, asParamErr(err)
	}
	return o, nil
}

// fieldKeys maps the Options fields that Validate checks to their
// ParseOptions keys.
var fieldKeys = map[string]string{
	"Options.Precision": "precision", "Options.Match": "match_types",
	"Options.BoxedPriority": "boxed_priority", "Options.Choices": "choices",
	"Options.MaxInputLen": "max_input_len", "Options.MaxDepth": "max_depth",
	"Options.MaxExponent": "max_exponent", "Options.MaxFactorial": "max_factorial",
	"Options.Timeout": "timeout_ms",
}

// asParamErr renames a Validate error after the parameter that set the
// field, so the caller reads the name it wrote.
func asParamErr(err error) error {
	var ae *tensor.ArgError
	if !errors.As(err, &ae) {
		return err
	}
	key, ok := fieldKeys[ae.Arg]
	if !ok {
		return err
	}
	return rangeErr(key, "%s", ae.Detail)
}

var paramKeys = []string{
	"allow_set_relation_comp", "boxed_priority", "choices", "match_types",
	"lenient", "max_depth", "max_exponent", "max_factorial", "max_input_len",
	"precision", "strict", "timeout_ms",
}

// paramErr reports a key that is unknown or of the wrong type.
func paramErr(key, format string, a ...any) error {
	return fmt.Errorf("mathverify: %w", tensor.Errorf(ErrParam, fmt.Sprintf("params[%q]", key), nil, format, a...))
}

// rangeErr reports a key whose value is out of its domain.
func rangeErr(key, format string, a ...any) error {
	return fmt.Errorf("mathverify: %w", tensor.Errorf(errParamRange, fmt.Sprintf("params[%q]", key), nil, format, a...))
}

func numParam(key string, v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, rangeErr(key, "%v, want a finite number", x)
		}
		return x, nil
	case float32:
		return numParam(key, float64(x))
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	}
	return 0, paramErr(key, "%T, want a number", v)
}

func intParam(key string, v any) (int, error) {
	x, err := numParam(key, v)
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || math.Abs(x) > 1<<40 {
		return 0, rangeErr(key, "%v, want an integer", x)
	}
	return int(x), nil
}

func boolParam(key string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, paramErr(key, "%T, want true or false", v)
	}
	return b, nil
}

func matchParam(key string, v any) (MatchType, error) {
	var names []string
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return 0, paramErr(key, "element %d is %T, want a string", i, e)
			}
			names = append(names, s)
		}
	case []string:
		names = x
	case string:
		names = []string{x}
	default:
		return 0, paramErr(key, "%T, want a list of strings", v)
	}
	var m MatchType
	for _, s := range names {
		switch s {
		case "latex":
			m |= MatchLatex
		case "expr":
			m |= MatchExpr
		case "choice":
			m |= MatchChoice
		default:
			return 0, paramErr(key, "%q, want \"latex\", \"expr\" or \"choice\"", s)
		}
	}
	if m == 0 {
		return 0, paramErr(key, "empty, want at least one of \"latex\", \"expr\", \"choice\"")
	}
	return m, nil
}
