package appo

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

// rawAttention returns 2 layers of 2 heads for 2 response tokens over 5
// key positions with a_jv^(h) in layer l = (l+1)(h+1)(j+1)·v/100, so that
// the mean over layers, heads and a span factorises: (j+1)/100 · 1.5 · 1.5
// · mean(v over the span). Column 0 holds NaN: no span covers it, so it
// must never be read.
func rawAttention() []tensor.Batch[float64] {
	const heads, L, N = 2, 2, 5
	layers := make([]tensor.Batch[float64], 2)
	for l := range layers {
		a := tensor.MustNew[float64](heads*L, N)
		for h := range heads {
			for j := range L {
				for v := range N {
					a.Set(h*L+j, v, float64((l+1)*(h+1)*(j+1)*v)/100)
				}
				a.Set(h*L+j, 0, math.NaN())
			}
		}
		layers[l] = a
	}
	return layers
}

func TestFrameAttention(t *testing.T) {
	// Frame 0 = keys 1..2 (mean v 1.5), frame 1 = keys 3..4 (3.5), frame
	// 2 = keys 2..3 (2.5), overlapping both as a merged temporal patch
	// would.
	spans := []Span{{1, 3}, {3, 5}, {2, 4}}
	dst := tensor.MustNew[float64](2, 3)
	if err := FrameAttention(dst, rawAttention(), 2, spans); err != nil {
		t.Fatal(err)
	}
	for j := range 2 {
		for f, mv := range []float64{1.5, 3.5, 2.5} {
			want := float64(j+1) / 100 * 2.25 * mv
			if got := dst.At(j, f); math.Abs(got-want) > 1e-15 {
				t.Errorf("Attn(%d, f%d) = %v, want %v", j, f, got, want)
			}
		}
	}

	// float32 storage, float64 accumulation: the same to float32 rounding.
	layers32 := make([]tensor.Batch[float32], 2)
	for l, a := range rawAttention() {
		layers32[l] = tensor.MustNew[float32](a.B, a.T)
		_ = tensor.Convert(layers32[l], tensor.Batch[float64]{Shape: a.Shape, Data: a.Data})
	}
	dst32 := tensor.MustNew[float32](2, 3)
	if err := FrameAttention(dst32, layers32, 2, spans); err != nil {
		t.Fatal(err)
	}
	for k, x := range dst32.Data {
		if math.Abs(float64(x)-dst.Data[k]) > 1e-7*dst.Data[k] {
			t.Errorf("float32 result %v differs from float64 %v", dst32.Data, dst.Data)
			break
		}
	}
}

func TestFrameAttentionErrors(t *testing.T) {
	spans := []Span{{1, 3}, {3, 5}}
	for _, c := range []struct {
		name   string
		edit   func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, spans *[]Span) []tensor.Batch[float64]
		kind   error
		substr string
	}{
		{"spans per frame", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			*s = (*s)[:1]
			return layers
		}, tensor.ErrShape, "spans: shape mismatch: 1 spans for the 2 frames"},
		{"no layers", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			return nil
		}, tensor.ErrEmpty, "layers"},
		{"no heads", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			*heads = 0
			return layers
		}, tensor.ErrRange, "heads"},
		{"rows are not H·L", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			*dst = tensor.MustNew[float64](3, 2)
			return layers
		}, tensor.ErrShape, "layers[0]: shape mismatch: shape [4, 5], want [H·L, N] = [2·3, 5]"},
		{"layers disagree on N", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			layers[1] = tensor.MustNew[float64](4, 6)
			return layers
		}, tensor.ErrShape, "layers[1]"},
		{"malformed layer", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			layers[1].Data = layers[1].Data[:7]
			return layers
		}, tensor.ErrShape, "layers[1]: shape mismatch: len(Data) = 7"},
		{"span past the keys", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			(*s)[1] = Span{3, 6}
			return layers
		}, tensor.ErrRange, "spans[1]: out of range: [3, 6) is not a non-empty range of the 5 key positions"},
		{"empty span", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			(*s)[0] = Span{2, 2}
			return layers
		}, tensor.ErrRange, "spans[0]"},
		{"negative start", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			(*s)[0] = Span{-1, 2}
			return layers
		}, tensor.ErrRange, "spans[0]"},
		{"negative weight in a span", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			layers[1].Set(3, 4, -0.5)
			return layers
		}, tensor.ErrRange, "layers[1,3,4]: out of range: -0.5 is negative"},
		{"NaN in a span", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			layers[0].Set(2, 1, math.NaN())
			return layers
		}, tensor.ErrNonFinite, "layers[0,2,1]: not finite: NaN"},
		{"malformed dst", func(dst *tensor.Batch[float64], layers []tensor.Batch[float64], heads *int, s *[]Span) []tensor.Batch[float64] {
			dst.Data = nil
			return layers
		}, tensor.ErrShape, "dst"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst, heads, s := tensor.MustNew[float64](2, 2), 2, append([]Span(nil), spans...)
			layers := c.edit(&dst, rawAttention(), &heads, &s)
			err := FrameAttention(dst, layers, heads, s)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) || !strings.HasPrefix(err.Error(), "appo: ") {
				t.Errorf("error %v, want %v containing %q", err, c.kind, c.substr)
			}
		})
	}
}
