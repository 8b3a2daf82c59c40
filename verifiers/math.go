package verifiers

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlpost/rlpost/verifiers/mathverify"
)

// Math scores a mathematical answer with package mathverify: the final
// answer of pred (the model's whole response) against ref (the trusted
// reference), compared exactly, numerically or symbolically. Score 1 or 0;
// Parsed is mathverify's rendering of what it extracted from pred.
//
// Parameters are mathverify.ParseOptions' keys: "precision", "strict",
// "allow_set_relation_comp", "match_types", "boxed_priority", "choices",
// the limits "max_input_len", "max_depth", "max_exponent", "max_factorial",
// "timeout_ms", and "lenient" (read a response without an answer slot
// whole, as Math-Verify does; default false: no slot, no score).
func Math(ctx context.Context, pred, ref string, p Params) (Result, error) {
	if err := p.checkSize(); err != nil {
		return Result{}, wrap("math", err)
	}
	if reason, err := checkInputs(ctx, pred, ref); err != nil || reason != "" {
		return Result{Reason: reason, Timeout: strings.HasPrefix(reason, "timeout")}, err
	}
	opts, err := mathverify.ParseOptions(map[string]any(p))
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrParam, err)
	}
	res, err := mathverify.Verify(ctx, ref, pred, opts)
	if err != nil {
		return Result{}, err
	}
	return Result{Score: res.Score, Correct: res.Correct, Parsed: res.Pred, Timeout: res.Timeout, Reason: res.Reason}, nil
}
