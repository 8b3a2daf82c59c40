// Package kinds holds the error kinds that package verifiers and package
// mathverify share, so that errors.Is finds one identity whichever of the
// two returned the error. Each package re-exports them.
package kinds

import "errors"

var (
	// ErrTooLarge: an input over a size limit.
	ErrTooLarge = errors.New("too large")
	// ErrSyntax: a reference (or other trusted input) that does not parse.
	ErrSyntax = errors.New("syntax error")
	// ErrParam: a parameter with the wrong type, an unknown name or a
	// value outside its domain.
	ErrParam = errors.New("bad parameter")
)
