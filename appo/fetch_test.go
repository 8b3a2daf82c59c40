package appo

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingSource counts the calls of Dist per token. With fill set it
// copies each row into dst and returns dst, as a source that computes a
// softmax on demand does, and scribbles over dst first, so that a row the
// Weighter did not keep would show in the weights.
type countingSource struct {
	*Dense[float64]
	fill  bool
	start []int
	calls []atomic.Int32
}

func newCountingSource(d *Dense[float64], fill bool) *countingSource {
	s := &countingSource{Dense: d, fill: fill, start: d.start, calls: make([]atomic.Int32, d.start[len(d.start)-1])}
	return s
}

func (s *countingSource) Dist(dst []float64, i, j int) ([]float64, error) {
	row, err := s.Dense.Dist(nil, i, j)
	if err != nil {
		return nil, err
	}
	s.calls[s.start[i]+j].Add(1)
	if !s.fill {
		return row, nil
	}
	for v := range dst {
		dst[v] = -1
	}
	return dst[:copy(dst, row)], nil
}

// TestEachDistributionFetchedOnce: a call asks the source for the
// distribution of every token in some group exactly once, and for no
// other, whether the source fills dst or returns rows of its own; the
// weights are those of the Dense source itself.
func TestEachDistributionFetchedOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var w Weighter[float64]
	checked := 0
	for n := range 150 {
		g := randomGroup(r, 2+r.IntN(6), 12, 1+r.IntN(6), 1+r.IntN(9))
		g.rewards[0], g.rewards[1] = 1, 0
		cfg := Config{Tau: 0.5, K1: 1 + r.IntN(6), K2: 1 + r.IntN(4), K3: 1 + r.IntN(6),
			Alpha: 1.7, Strategy: Strategy(r.IntN(3)), SumTol: 1e-9}
		in := g.inputs(t)
		want := make([]float64, len(flat(must(reference(g, cfg)))))
		if _, err := w.Weights(want, in, cfg); err != nil {
			t.Fatal(err)
		}
		used := make(map[int]bool)
		for _, u := range w.used {
			used[u] = true
		}
		for _, fill := range []bool{false, true} {
			src := newCountingSource(in.Dists.(*Dense[float64]), fill)
			in := in
			in.Dists = src
			got := make([]float64, len(want))
			res, err := w.Weights(got, in, cfg)
			require.NoError(t, err)
			require.Equalf(t, want, got, "case %d, fill %v: weights", n, fill)
			fetched := 0
			for tok := range src.calls {
				c := src.calls[tok].Load()
				if used[tok] {
					require.EqualValuesf(t, 1, c, "case %d, fill %v: token %d is in a group", n, fill, tok)
					fetched++
				} else {
					require.Zerof(t, c, "case %d, fill %v: token %d is in no group", n, fill, tok)
				}
			}
			require.Equal(t, res.Weighted, fetched)
			checked += fetched
		}
	}
	require.Greater(t, checked, 1000, "too few grouped tokens to test anything")
}

// TestLongVocabulary: with distributions of thousands of words, not a
// multiple of the eight AVX-512 lanes, the weights are the reference's.
func TestLongVocabulary(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	var w Weighter[float64]
	for n := range 6 {
		g := randomGroup(r, 3+r.IntN(4), 8, 1+r.IntN(4), 4097+r.IntN(2048))
		g.rewards[0], g.rewards[1] = 1, 0
		cfg := Config{Tau: 0.5, K1: 1 + r.IntN(4), K2: 1 + r.IntN(3), K3: 1 + r.IntN(4),
			Alpha: 1.7, Strategy: Soft, SumTol: 1e-9}
		want, _ := reference(g, cfg)
		got := make([]float64, len(flat(want)))
		res, err := w.Weights(got, g.inputs(t), cfg)
		require.NoError(t, err)
		require.Positive(t, res.Weighted, "case %d: no grouped token", n)
		require.InDeltaSlicef(t, flat(want), got, 1e-9, "case %d", n)
	}
}
