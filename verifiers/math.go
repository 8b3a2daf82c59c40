package verifiers

import (
	"context"
	"errors"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/norm"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
	"github.com/rlpost/rlpost/verifiers/mathverify"
)

// Math scores a mathematical answer with package mathverify: the final
// answer of response (the model's whole output) against reference (the
// trusted answer, bare or a worked solution), compared exactly, numerically
// or symbolically. Score 1 or 0; Parsed is the answer mathverify read from
// the response (a formula as parsed, words as written). "math" is in the
// Default registry like every built-in; nothing needs registering.
//
// Parameters are mathverify.ParseOptions' keys: "precision", "strict",
// "allow_set_relation_comp", "match_types", "boxed_priority", "choices",
// the limits "max_input_len", "max_depth", "max_exponent", "max_factorial",
// "timeout_ms", and "lenient" (read a response without an answer slot
// whole, as Math-Verify does; default false: no slot, no score). A
// misspelt key or a value of the wrong type is a *tensor.ArgError wrapping
// ErrParam; a value out of its range wraps tensor.ErrRange as well. A
// reference that does not parse (`\frac{`, `}}}`) is an error wrapping
// ErrSyntax.
//
// Both sides are normalised before mathverify reads them
// (docs/spec.md#text-normalisation): invisible characters removed, digits
// of any script, vulgar fractions, superscripts, NFKC; and a slot written
// only in number words ("forty-two", "minus seven") is read as digits.
func Math(ctx context.Context, response, reference string, p Params) (Result, error) {
	return mathRule.verify(ctx, response, reference, p)
}

var mathRule = rule{name: "math", ownKeys: true, read: readMath, score: scoreMath}

func readMath(p Params, c *config) error {
	opts, err := mathverify.ParseOptions(map[string]any(p))
	if err != nil {
		return unprefixed(err)
	}
	c.math, err = mathverify.New(opts)
	return unprefixed(err)
}

func scoreMath(ctx context.Context, pred string, _ bool, ref string, c *config) (Result, error) {
	res, err := c.math.Verify(ctx, mathWords(pred), ref)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return Result{}, ctx.Err() // wrapped as "verifiers: math: context canceled"
		}
		var ae *tensor.ArgError
		if errors.As(err, &ae) {
			switch ae.Arg {
			case "reference":
				return Result{}, renameArg(ae, "ref")
			case "response":
				return Result{}, renameArg(ae, "pred")
			}
		}
		return Result{}, unprefixed(err)
	}
	return Result{Score: res.Score, Correct: res.Correct, Parsed: res.Pred, Timeout: res.Timeout, Reason: res.Reason}, nil
}

// unprefixed returns the *tensor.ArgError inside a mathverify error, so
// that the caller's prefix ("verifiers: math: ") is the only one.
func unprefixed(err error) error {
	var ae *tensor.ArgError
	if errors.As(err, &ae) {
		return ae
	}
	return err
}

// mathWords rewrites the answer slot of pred as digits when it holds no
// digit and no LaTeX and is written in number words ("The answer is
// forty-two."), so that mathverify reads the number.
func mathWords(pred string) string {
	s := slot.Find(pred, false)
	if s.Kind == slot.None || len(s.Values) != 1 {
		return pred
	}
	v := s.Values[0]
	if strings.ContainsAny(v, "0123456789\\") {
		return pred
	}
	w, ok := norm.NumberWords(v)
	if !ok || !strings.ContainsAny(w, "0123456789") {
		return pred
	}
	k := strings.LastIndex(pred[s.Start:s.End], v)
	if k < 0 {
		return pred
	}
	k += s.Start
	return pred[:k] + w + pred[k+len(v):]
}
