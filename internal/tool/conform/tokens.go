package conform

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/rlpost/rlpost/tensor"
)

// Tokens is a per-token field of a request or response: a list of rows
// ([[...], [...]]) for a padded [B, T] batch, or, in a request with
// "cu_seqlens", one flat list ([...]) of every row's tokens in turn: the
// packed layout of flash-attention's variable-length kernels
// (docs/conformance.md#packed-batches).
type Tokens struct {
	Rows [][]float64
	Flat []float64
	// Packed marks the flat form; a response answers a packed request in
	// it.
	Packed bool
}

// UnmarshalJSON accepts rows or a flat list; null leaves x absent.
func (x *Tokens) UnmarshalJSON(b []byte) error {
	*x = Tokens{}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(b, &x.Rows); err == nil {
		return nil
	}
	x.Rows = nil
	if err := json.Unmarshal(b, &x.Flat); err != nil {
		return errors.New("want a list of rows of numbers, or with cu_seqlens one flat list of numbers")
	}
	x.Packed = true
	if x.Flat == nil {
		x.Flat = []float64{}
	}
	return nil
}

// MarshalJSON writes the rows, or the flat list of a packed batch.
func (x Tokens) MarshalJSON() ([]byte, error) {
	if x.Packed {
		return json.Marshal(x.Flat)
	}
	return json.Marshal(x.Rows)
}

// present reports whether the field was given.
func (x Tokens) present() bool { return x.Rows != nil || x.Packed }

// tokensOf is the response form of a batch: flat when it is packed.
func tokensOf(x tensor.Batch[float64]) Tokens {
	if x.IsPacked() {
		return Tokens{Flat: x.Data, Packed: true}
	}
	return Tokens{Rows: rows(x)}
}

// tokens converts a per-token field to a batch: rows without cu_seqlens,
// a flat list packed by cuSeqlens with it (an empty list [] is either).
// A missing required field is ErrEmpty; a missing optional one the zero
// Batch.
func (bs *batches) tokens(name string, x Tokens, cuSeqlens []int, required bool) tensor.Batch[float64] {
	if bs.err != nil {
		return tensor.Batch[float64]{}
	}
	switch {
	case !x.present():
		if required {
			bs.err = tensor.Errorf(tensor.ErrEmpty, name, nil, "missing")
		}
		return tensor.Batch[float64]{}
	case cuSeqlens == nil && x.Packed:
		bs.err = tensor.Errorf(tensor.ErrShape, name, nil, "a flat list, which needs cu_seqlens; without it, give a list of rows")
		return tensor.Batch[float64]{}
	case cuSeqlens == nil:
		var b tensor.Batch[float64]
		b, bs.err = matrix(name, x.Rows)
		return b
	case !x.Packed && len(x.Rows) > 0:
		bs.err = tensor.Errorf(tensor.ErrShape, name, nil, "a list of rows, but the request has cu_seqlens: give one flat list of every row's tokens")
		return tensor.Batch[float64]{}
	}
	flat := x.Flat
	if flat == nil {
		flat = []float64{}
	}
	b, err := tensor.Packed(flat, cuSeqlens)
	if err != nil {
		var ae *tensor.ArgError
		if errors.As(err, &ae) && ae.Arg == "cu_seqlens" && ae.Kind == tensor.ErrShape {
			ae.Arg = name // its length disagrees with cu_seqlens
		}
		bs.err = err
	}
	return b
}

// like allocates an output batch of x's layout.
func like(x tensor.Batch[float64]) tensor.Batch[float64] {
	if x.IsPacked() {
		b, err := tensor.Packed(make([]float64, x.Len()), x.Offsets)
		if err != nil {
			panic(err) // x's offsets were validated
		}
		return b
	}
	return tensor.MustNew[float64](x.B, x.T)
}
