package appo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Span is the half-open range [Start, End) of key positions that hold one
// frame's visual tokens.
type Span struct{ Start, End int }

// FrameAttention computes Eq. 4 for one response: the attention of each of
// its L response tokens to each frame f_t,
//
//	Attn(j, f_t) = 1/(n_layers·H·|f_t|) · Σ_layers Σ_h Σ_{v ∈ f_t} a_jv^(h),
//
// the mean over the chosen layers, the heads and the frame's visual tokens.
// dst is the [L, F] result, one column per frame, ready to be
// Inputs.Attention[i]. layers[l] holds the attention weights of layer l as
// an [H·L, N] batch, row h·L + j for head h and response token j, column v
// for key position v: eager attention's [H, q, k] output with the query
// rows cut to the response tokens. spans[t] gives the columns of frame t,
// so N may cover only the visual tokens or every key position. Spans may
// overlap: a model that merges frames into one temporal patch (Qwen2.5-VL
// merges pairs) gives the merged frames the same tokens.
//
// Only the columns inside spans are read; each must be finite and ≥ 0.
// dst is unspecified when an error is returned. FrameAttention allocates
// nothing.
func FrameAttention[F tensor.Float](dst tensor.Batch[F], layers []tensor.Batch[F], heads int, spans []Span) error {
	if err := frameAttention(dst, layers, heads, spans); err != nil {
		return fmt.Errorf("appo: %w", err)
	}
	return nil
}

func frameAttention[F tensor.Float](dst tensor.Batch[F], layers []tensor.Batch[F], heads int, spans []Span) error {
	if err := dst.Check("dst"); err != nil {
		return err
	}
	L, nf := dst.B, dst.T
	if len(spans) != nf {
		return tensor.Errorf(tensor.ErrShape, "spans", nil, "%d spans for the %d frames (columns) of dst", len(spans), nf)
	}
	if len(layers) == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "layers", nil, "no layers")
	}
	if heads < 1 || L > 0 && heads > math.MaxInt/L {
		return tensor.Errorf(tensor.ErrRange, "heads", nil, "%d, want ≥ 1 (and H·L within int)", heads)
	}
	n := layers[0].T
	for l, a := range layers {
		if a.Check("layers") != nil {
			// Check again with the index in the name; only on this
			// path, so that the good path formats nothing.
			return a.Check(fmt.Sprintf("layers[%d]", l))
		}
		if a.B != heads*L || a.T != n {
			return tensor.Errorf(tensor.ErrShape, "layers", tensor.At(l),
				"shape [%d, %d], want [H·L, N] = [%d·%d, %d] like layers[0]", a.B, a.T, heads, L, n)
		}
	}
	for t, s := range spans {
		if s.Start < 0 || s.End > n || s.Start >= s.End {
			return tensor.Errorf(tensor.ErrRange, "spans", tensor.At(t),
				"[%d, %d) is not a non-empty range of the %d key positions", s.Start, s.End, n)
		}
	}
	for j := range L {
		out := dst.Row(j)
		for t, s := range spans {
			sum := 0.0
			for l, a := range layers {
				for h := range heads {
					r := h*L + j
					row := a.Data[r*n+s.Start : r*n+s.End]
					part := 0.0
					for v, x := range row {
						if !(x >= 0) || !tensor.IsFinite(x) {
							return badAttention("layers", tensor.At(l, r, s.Start+v), float64(x))
						}
						part += float64(x)
					}
					sum += part
				}
			}
			out[t] = F(sum / float64(len(layers)*heads*(s.End-s.Start)))
		}
	}
	return nil
}

// badAttention reports an attention value that is NaN, infinite or
// negative: attention weights are softmax outputs, so any of these means
// the caller passed something else.
func badAttention(name string, at []int, x float64) error {
	if !tensor.IsFinite(x) {
		return tensor.Errorf(tensor.ErrNonFinite, name, at, "%v", x)
	}
	return tensor.Errorf(tensor.ErrRange, name, at, "%v is negative; attention weights are ≥ 0", x)
}
