package appo

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

// bytes hands out fuzz input one byte at a time, 0 once it runs out.
type bytes struct {
	b []byte
	k int
}

func (s *bytes) next() int {
	if s.k >= len(s.b) {
		return 0
	}
	s.k++
	return int(s.b[s.k-1])
}

// value maps a byte to a number in [0, 1], or, for the last few byte
// values, to one of the inputs every entry point must reject.
func (s *bytes) value() (float64, bool) {
	switch b := s.next(); b {
	case 255:
		return math.NaN(), true
	case 254:
		return -0.5, true
	case 253:
		return math.Inf(1), true
	default:
		return float64(b%16) / 15, false // few levels: many ties
	}
}

func FuzzWeights(f *testing.F) {
	f.Add([]byte{3, 4, 3, 1, 2, 3, 0, 40, 128, 3, 9, 8, 7, 6, 5, 4, 3, 2, 1, 10, 20, 30, 40, 50, 60, 70, 80})
	f.Add([]byte{5, 2, 2, 15, 1, 1, 2, 200, 128, 1, 255, 1, 2})
	f.Add([]byte{1, 0, 1, 1, 1, 1, 1, 0, 0})
	f.Add([]byte{2, 3, 4, 2, 2, 70, 1, 17, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 254, 16})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &bytes{b: data}
		g, nf, v := 1+s.next()%6, s.next()%5, 1+s.next()%5
		cfg := Config{
			K1: s.next() % 13, K2: s.next() % 7, K3: s.next() % 13, Strategy: Strategy(s.next() % 4),
			Alpha: float64(s.next()) / 64, Tau: float64(s.next()) / 255, SumTol: 1e-9,
		}
		unnormalised := s.next()%8 == 0
		gr := group{rewards: make([]float64, g), attn: make([][][]float64, g), dists: make([][][]float64, g)}
		bad := false
		for i := range g {
			gr.rewards[i] = float64(s.next()%3) / 2
			n := s.next() % 6
			gr.attn[i], gr.dists[i] = make([][]float64, n), make([][]float64, n)
			for j := range n {
				gr.attn[i][j] = make([]float64, nf)
				for k := range nf {
					x, special := s.value()
					gr.attn[i][j][k], bad = x, bad || special
				}
				p, sum := make([]float64, v), 0.0
				for k := range p {
					x, special := s.value()
					p[k], bad, sum = x, bad || special, sum+x
				}
				if sum == 0 {
					p[0], sum = 1, 1
				}
				if !unnormalised {
					for k := range p {
						p[k] /= sum
					}
				}
				gr.dists[i][j] = p
			}
		}
		in := gr.inputs(t)
		if s.next()%2 == 1 {
			in.Dists = &withEntropy{Dense: in.Dists.(*Dense[float64])}
		}
		tokens := 0
		for _, a := range gr.attn {
			tokens += len(a)
		}
		dst := make([]float64, tokens)

		res, err := Weights(dst, in, cfg)
		if err != nil {
			var ae *tensor.ArgError
			if !errors.As(err, &ae) || !strings.HasPrefix(err.Error(), "appo: ") {
				t.Fatalf("error %v is not an ArgError naming the argument", err)
			}
			if !bad && !unnormalised && cfg.Validate() == nil {
				t.Fatalf("valid input rejected: %v", err)
			}
			return
		}
		if cfg.Validate() != nil {
			t.Fatalf("invalid config %+v accepted", cfg)
		}
		// A bad value can pass unread only in the distribution of a
		// token in no group; everything read is checked, so the
		// weights are in range either way.
		for k, x := range dst {
			if !(x >= 1-1e-12 && x <= 1+cfg.Alpha+1e-12) {
				t.Fatalf("weight %d = %v outside [1, 1+α = %v]", k, x, 1+cfg.Alpha)
			}
		}
		if bad || unnormalised {
			return
		}
		want, frames := reference(gr, cfg)
		if !slices.Equal(res.Frames, frames) {
			t.Fatalf("frames %v, reference %v", res.Frames, frames)
		}
		for k, x := range flat(want) {
			if math.Abs(dst[k]-x) > 1e-6 {
				t.Fatalf("weight %d = %.12g, reference %.12g", k, dst[k], x)
			}
		}
	})
}

func FuzzFrameAttention(f *testing.F) {
	f.Add([]byte{2, 2, 2, 5, 1, 3, 3, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{1, 1, 1, 3, 0, 3, 255})
	f.Add([]byte{3, 0, 2, 4, 2, 2, 1, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &bytes{b: data}
		L, heads, nl, n, nf := s.next()%4, s.next()%4, s.next()%4, s.next()%7, s.next()%4
		spans := make([]Span, nf)
		for k := range spans {
			spans[k] = Span{s.next()%9 - 1, s.next()%9 - 1}
		}
		if s.next()%5 == 0 && nf > 0 {
			spans = spans[1:] // a span count that does not match dst
		}
		layers := make([]tensor.Batch[float64], nl)
		for l := range layers {
			layers[l] = tensor.MustNew[float64](heads*L, n)
			for e := range layers[l].Data {
				layers[l].Data[e], _ = s.value()
			}
		}
		dst := tensor.MustNew[float64](L, nf)
		err := FrameAttention(dst, layers, heads, spans)
		if err != nil {
			var ae *tensor.ArgError
			if !errors.As(err, &ae) || !strings.HasPrefix(err.Error(), "appo: ") {
				t.Fatalf("error %v is not an ArgError naming the argument", err)
			}
			return
		}
		for j := range L {
			for k, sp := range spans {
				sum := 0.0
				for _, a := range layers {
					for h := range heads {
						for v := sp.Start; v < sp.End; v++ {
							sum += a.At(h*L+j, v)
						}
					}
				}
				want := sum / float64(nl*heads*(sp.End-sp.Start))
				if got := dst.At(j, k); !(math.Abs(got-want) <= 1e-12) || got < 0 {
					t.Fatalf("Attn(%d, %d) = %v, want %v", j, k, got, want)
				}
			}
		}
	})
}

func FuzzScatter(f *testing.F) {
	f.Add([]byte{2, 3, 1, 0, 1, 1, 1, 0, 2, 2, 5, 6, 7, 8})
	f.Add([]byte{1, 2, 1, 2, 1, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &bytes{b: data}
		b, tt := s.next()%4, s.next()%5
		mask := tensor.MustNew[float32](b, tt)
		for e := range mask.Data {
			mask.Data[e] = float32(s.next() % 3 / 2) // mostly 0 and 1
			if s.next() == 7 {
				mask.Data[e] = 0.5
			}
		}
		lengths := make([]int, b)
		total := 0
		for r := range lengths {
			for _, m := range mask.Row(r) {
				if m == 1 {
					lengths[r]++
				}
			}
			if s.next()%6 == 0 {
				lengths[r] += s.next()%3 - 1 // sometimes wrong
			}
			total += lengths[r]
		}
		w := make([]float32, max(0, total+s.next()%3-1))
		for k := range w {
			x, _ := s.value()
			w[k] = float32(x)
		}
		dst := tensor.MustNew[float32](b, tt)
		if err := Scatter(dst, mask, w, lengths); err != nil {
			var ae *tensor.ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an ArgError", err)
			}
			return
		}
		k := 0
		for e, m := range mask.Data {
			want := float32(1)
			if m == 1 {
				want = w[k]
				k++
			}
			if dst.Data[e] != want {
				t.Fatalf("dst[%d] = %v, want %v", e, dst.Data[e], want)
			}
		}
		if k != len(w) {
			t.Fatalf("%d weights placed, %d given", k, len(w))
		}
	})
}
