package appo

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

// withEntropy is a Dense source that also gives entropies, computed with
// math.Log, and counts the calls; bad, when set, overrides one answer.
type withEntropy struct {
	*Dense[float64]
	calls atomic.Int64
	bad   *badEntropy
}

// badEntropy is the answer h, err for token (i, j).
type badEntropy struct {
	i, j int
	h    float64
	err  error
}

func (s *withEntropy) Entropy(i, j int) (float64, error) {
	s.calls.Add(1)
	if b := s.bad; b != nil && b.i == i && b.j == j {
		return b.h, b.err
	}
	p, err := s.Dist(nil, i, j)
	if err != nil {
		return 0, err
	}
	h := 0.0
	for _, x := range p {
		if x > 0 {
			h -= x * math.Log(x)
		}
	}
	return h, nil
}

func TestEntropiesGiveTheSameWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	var w Weighter[float64]
	for n := range 200 {
		g := randomGroup(r, 1+r.IntN(7), 9, 1+r.IntN(6), 1+r.IntN(7))
		cfg := Config{Tau: 0.5, K1: 1 + r.IntN(10), K2: 1 + r.IntN(7), K3: 1 + r.IntN(10),
			Alpha: 1.7, Strategy: Strategy(r.IntN(3)), SumTol: 1e-9}
		in := g.inputs(t)
		want := make([]float64, len(flat(must(reference(g, cfg)))))
		if _, err := w.Weights(want, in, cfg); err != nil {
			t.Fatal(err)
		}
		src := &withEntropy{Dense: in.Dists.(*Dense[float64])}
		in.Dists = src
		got := make([]float64, len(want))
		res, err := w.Weights(got, in, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-9 {
				t.Fatalf("case %d: weight %d = %.15g with entropies, %.15g without", n, k, got[k], want[k])
			}
		}
		if c := src.calls.Load(); c != int64(res.Weighted) {
			t.Fatalf("case %d: %d calls to Entropy, want one per grouped token: %d", n, c, res.Weighted)
		}
	}
}

func TestEntropiesErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		h      float64
		err    error
		kind   error
		substr string
	}{
		{"source error", 0, errSource, errSource, "Dists.Entropy(1, 2): logits evicted"},
		{"NaN", math.NaN(), nil, tensor.ErrNonFinite, "dists[1,2]: not finite: Entropy = NaN"},
		{"infinite", math.Inf(1), nil, tensor.ErrNonFinite, "dists[1,2]"},
		{"negative", -0.1, nil, tensor.ErrRange, "dists[1,2]: out of range: Entropy = -0.1 is negative"},
		{"negative within the tolerance", -1e-4, nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := errGroup().inputs(t)
			in.Dists = &withEntropy{Dense: in.Dists.(*Dense[float64]), bad: &badEntropy{1, 2, c.h, c.err}}
			_, err := Weights(make([]float64, 5), in, DefaultConfig())
			if c.kind == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) {
				t.Errorf("error %v, want %v containing %q", err, c.kind, c.substr)
			}
		})
	}
}
