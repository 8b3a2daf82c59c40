package conform

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

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

// UnmarshalJSON accepts rows or a flat list of numbers, each of which may
// also be the string NegInf; null leaves x absent (the request's checker
// has refused a null field before).
func (x *Tokens) UnmarshalJSON(b []byte) error {
	*x = Tokens{}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	if bytes.IndexByte(b, '"') >= 0 {
		return x.unmarshalNegInf(b)
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

// entry is one token that may be spelt NegInf.
type entry float64

func (e *entry) UnmarshalJSON(b []byte) error {
	if string(b) == strconv.Quote(NegInf) {
		*e = entry(math.Inf(-1))
		return nil
	}
	return json.Unmarshal(b, (*float64)(e))
}

// unmarshalNegInf is UnmarshalJSON's slow path, for a field that holds a
// string, which can only be NegInf.
func (x *Tokens) unmarshalNegInf(b []byte) error {
	var rows [][]entry
	if err := json.Unmarshal(b, &rows); err == nil {
		x.Rows = make([][]float64, len(rows))
		for i, r := range rows {
			x.Rows[i] = make([]float64, len(r))
			for j, v := range r {
				x.Rows[i][j] = float64(v)
			}
		}
		return nil
	}
	var flat []entry
	if err := json.Unmarshal(b, &flat); err != nil {
		return errors.New("want a list of rows of numbers, or with cu_seqlens one flat list of numbers")
	}
	x.Flat, x.Packed = make([]float64, len(flat)), true
	for i, v := range flat {
		x.Flat[i] = float64(v)
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
