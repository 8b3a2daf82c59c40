package verifiers

import (
	"context"
	"errors"
	"fmt"

	"github.com/rlpost/rlpost/verifiers/internal/kinds"
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
	// found nothing to score or several different answers (a hedge, which
	// Reason names: no one candidate was judged).
	Parsed string
	// Timeout reports a call stopped by its deadline (the context's or the
	// verifier's own budget) before it could decide; Score is 0 then, and
	// it is no verdict on the response. Past the context's deadline the
	// built-in verifiers also return an error wrapping
	// context.DeadlineExceeded; a trainer marks such a sample unscored
	// (grpo.Inputs.Scored, ScoredMask) rather than feed its 0.
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
// limit (ErrTooLarge), a cancelled context (wrapping context.Canceled) or
// an expired one (wrapping context.DeadlineExceeded, with Result.Timeout).
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
