package tensor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kinds of invalid input. An *ArgError wraps one of them, so callers can
// branch with errors.Is(err, tensor.ErrNonFinite) without parsing messages.
var (
	// ErrShape: an argument's length or shape does not match the others.
	ErrShape = errors.New("shape mismatch")
	// ErrNonFinite: a NaN or an infinity where a finite number is required.
	ErrNonFinite = errors.New("not finite")
	// ErrMask: a mask entry other than 0 or 1.
	ErrMask = errors.New("mask entry not 0 or 1")
	// ErrEmpty: an argument that must hold something holds nothing.
	ErrEmpty = errors.New("empty")
	// ErrRange: a value outside the domain the algorithm is defined on.
	ErrRange = errors.New("out of range")
	// ErrOverlap: an output shares memory with another output or with an
	// input it must not alias.
	ErrOverlap = errors.New("overlaps another argument")
)

// ArgError reports which argument of a call is invalid, where in it, and why.
type ArgError struct {
	// Arg names the argument as the caller knows it, e.g. "logp" or
	// "Config.ClipLow".
	Arg string
	// Index is the position of the bad element, (row, column) for a batch,
	// (i) for a vector; nil when the argument is wrong as a whole.
	Index []int
	// Kind is one of ErrShape, ErrNonFinite, ErrMask, ErrEmpty, ErrRange,
	// ErrOverlap.
	Kind error
	// Detail says what was found, e.g. "NaN" or "length 7, want 8".
	Detail string
}

func (e *ArgError) Error() string {
	var sb strings.Builder
	sb.WriteString(e.Arg)
	if len(e.Index) > 0 {
		sb.WriteByte('[')
		for i, v := range e.Index {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(v))
		}
		sb.WriteByte(']')
	}
	sb.WriteString(": ")
	sb.WriteString(e.Kind.Error())
	if e.Detail != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Detail)
	}
	return sb.String()
}

// Unwrap returns the kind, so errors.Is matches ErrShape and its siblings.
func (e *ArgError) Unwrap() error { return e.Kind }

// Errorf returns an *ArgError for argument arg at index (nil for the whole
// argument) of the given kind, with a formatted detail.
func Errorf(kind error, arg string, index []int, format string, a ...any) error {
	return &ArgError{Arg: arg, Index: index, Kind: kind, Detail: fmt.Sprintf(format, a...)}
}

// At is a convenience for building the Index of an ArgError.
func At(i ...int) []int { return i }
