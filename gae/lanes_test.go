package gae_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// TestTokenRowsInLanesMatchOneByOne: with AVX-512 the token-level scan of
// float32 rows runs them in the eight lanes of one kernel, pieces of rows
// in turn, each lane taking a new row when its row ends, the first rows
// started skewed and rows' last tokens in Go. On random batches (row
// counts around one and several pieces, lengths that are and are not
// multiples of 8, empty and full rows, rows with holes, rows longer than a
// skew) every row gets the bits it gets alone, whitened or not.
func TestTokenRowsInLanesMatchOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 60 {
		B := []int{4, 5, 8, 9, 16, 17, 31, 40}[trial%8]
		T := 1 + rng.IntN(300)
		if trial%5 == 0 {
			T = 256 // rows a multiple of 1024 bytes apart
		}
		r, v, m := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
		for b := range B {
			n := rng.IntN(T + 1)
			switch rng.IntN(5) {
			case 0:
				n = T
			case 1:
				n = T - T%8
			}
			for i := range T {
				r.Set(b, i, float32(rng.NormFloat64()))
				v.Set(b, i, float32(rng.NormFloat64()*2))
				if i < n {
					m.Set(b, i, 1)
				} else {
					r.Set(b, i, float32(math.NaN())) // padding holds anything
				}
			}
			if rng.IntN(10) == 0 && n > 2 {
				m.Set(b, rng.IntN(n-1), 0) // a hole: this row runs alone
			}
		}
		for _, whiten := range []bool{false, true} {
			t.Run(fmt.Sprintf("trial%d/B%d/T%d/whiten%v", trial, B, T, whiten), func(t *testing.T) {
				cfg := gae.Config{Gamma: 0.99, Lambda: 0.95}
				if !whiten {
					bothScans(func() { rowsMatch[float32](t, r, v, m, cfg) })
					return
				}
				// Whitened: the batch against the whitening of the rows
				// computed alone.
				cfg.Whiten = true
				adv, ret := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
				require.NoError(t, gae.Advantages(adv, ret, r, v, m, cfg))
				cfg.Whiten = false
				raw, rawRet := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
				for b := range B {
					a1, r1 := tensor.MustNew[float32](1, T), tensor.MustNew[float32](1, T)
					one := func(x tensor.Batch[float32]) tensor.Batch[float32] {
						y := tensor.MustNew[float32](1, T)
						copy(y.Data, x.Row(b))
						return y
					}
					require.NoError(t, gae.Advantages(a1, r1, one(r), one(v), one(m), cfg))
					copy(raw.Row(b), a1.Data)
					copy(rawRet.Row(b), r1.Data)
				}
				// Sums per row, then over rows in order, as documented.
				n, sum := 0, 0.0
				for b := range B {
					rn, rs := 0, 0.0
					for i, mt := range m.Row(b) {
						if mt == 1 {
							rn++
							rs += float64(raw.Row(b)[i])
						}
					}
					n, sum = n+rn, sum+rs
				}
				if n == 0 {
					return
				}
				mean, ss := sum/float64(n), 0.0
				for b := range B {
					rs := 0.0
					for i, mt := range m.Row(b) {
						if mt == 1 {
							d := float64(raw.Row(b)[i]) - mean
							rs += d * d
						}
					}
					ss += rs
				}
				variance := 0.0
				if n > 1 {
					variance = ss / float64(n-1)
				}
				scale := 1 / math.Sqrt(variance+1e-8)
				for i, mt := range m.Data {
					want := raw.Data[i]
					if mt == 1 {
						want = float32((float64(raw.Data[i]) - mean) * scale)
					}
					require.Equal(t, math.Float32bits(want), math.Float32bits(adv.Data[i]), "adv %d", i)
					require.Equal(t, math.Float32bits(rawRet.Data[i]), math.Float32bits(ret.Data[i]), "ret %d", i)
				}
			})
		}
	}
}

// TestTokenRowsInLanesNameTheRowThatOverflows: a row that overflows in the
// kernel's part or in its Go tail is the one the error names, wherever it
// lies among the pieces and lanes.
func TestTokenRowsInLanesNameTheRowThatOverflows(t *testing.T) {
	const B, T = 20, 100
	for _, c := range []struct{ row, at, n int }{{0, 50, T}, {7, 3, T}, {19, 90, 97}, {12, 95, 97}, {3, 1, 5}} {
		r, v, m := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
		for b := range B {
			n := 60 + b
			if b == c.row {
				n = c.n
			}
			for i := range n {
				m.Set(b, i, 1)
				r.Set(b, i, 1)
			}
		}
		r.Set(c.row, c.at, 3e38)
		r.Set(c.row, c.at-1, 3e38)
		err := gae.Advantages(tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), r, v, m, gae.DefaultConfig())
		require.ErrorIs(t, err, tensor.ErrRange)
		require.ErrorContains(t, err, fmt.Sprintf("adv[%d,", c.row))
	}
}

// TestLanesAllocateNothing: the eight-lane scans (and the four-row one)
// allocate nothing in steady state, on a batch large enough to be split
// across workers.
func TestLanesAllocateNothing(t *testing.T) {
	const B, T = 40, 1000
	r, v, m, e := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
	rng := rand.New(rand.NewPCG(5, 6))
	for b := range B {
		n := T/2 + rng.IntN(T/2)
		for i := range n {
			r.Set(b, i, float32(rng.NormFloat64()))
			v.Set(b, i, float32(rng.NormFloat64()))
			m.Set(b, i, 1)
			if i%50 == 49 || i == n-1 {
				e.Set(b, i, 1)
			}
		}
	}
	adv, ret := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
	cfg := gae.Config{Gamma: 1, Lambda: 0.95, Whiten: true}
	bi := gae.DefaultBiLevelConfig()
	run := func() {
		require.NoError(t, gae.Advantages(adv, ret, r, v, m, cfg))
		require.NoError(t, gae.BiLevel(adv, ret, r, v, m, e, bi))
	}
	bothScans(func() {
		run()
		require.Zero(t, testing.AllocsPerRun(20, run))
	})
}

// TestLanesSameBitsAtAnyGOMAXPROCS: the eight-lane scans give the same
// bits on one processor and on several (each row's result is its own and
// whitening combines rows in order).
func TestLanesSameBitsAtAnyGOMAXPROCS(t *testing.T) {
	const B, T = 48, 1024
	r, v, m, e := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
	rng := rand.New(rand.NewPCG(7, 7))
	for b := range B {
		n := T/3 + rng.IntN(T-T/3)
		for i := range n {
			r.Set(b, i, float32(rng.NormFloat64()))
			v.Set(b, i, float32(rng.NormFloat64()))
			m.Set(b, i, 1)
			if rng.IntN(40) == 0 || i == n-1 {
				e.Set(b, i, 1)
			}
		}
	}
	run := func() [4][]float32 {
		var out [4][]float32
		adv, ret := tensor.MustNew[float32](B, T), tensor.MustNew[float32](B, T)
		require.NoError(t, gae.Advantages(adv, ret, r, v, m, gae.Config{Gamma: 1, Lambda: 0.95, Whiten: true}))
		out[0], out[1] = slices.Clone(adv.Data), slices.Clone(ret.Data)
		bi := gae.DefaultBiLevelConfig()
		bi.Whiten = true
		require.NoError(t, gae.BiLevel(adv, ret, r, v, m, e, bi))
		out[2], out[3] = slices.Clone(adv.Data), slices.Clone(ret.Data)
		return out
	}
	many := run()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := run()
	for i := range many {
		for k := range many[i] {
			require.Equal(t, math.Float32bits(one[i][k]), math.Float32bits(many[i][k]), "output %d entry %d", i, k)
		}
	}
}
