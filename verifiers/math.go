package verifiers

import (
	"context"
	"errors"

	"github.com/rlpost/rlpost/tensor"
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
	res, err := c.math.Verify(ctx, pred, ref)
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
