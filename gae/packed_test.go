package gae_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// ragged is one set of rows in both layouts: padded to the longest row
// (padding holds NaN and mask 0) and packed with cu_seqlens.
type ragged[F tensor.Float] struct {
	lengths    []int
	r, v, m, e [2]tensor.Batch[F] // [0] padded, [1] packed
	adv, ret   [2]tensor.Batch[F]
}

func newRagged[F tensor.Float](rng *rand.Rand, lengths []int, prefix bool) ragged[F] {
	off := make([]int, len(lengths)+1)
	T := 0
	for b, n := range lengths {
		off[b+1] = off[b] + n
		T = max(T, n)
	}
	pair := func() [2]tensor.Batch[F] {
		p, err := tensor.Packed(make([]F, off[len(lengths)]), off)
		if err != nil {
			panic(err)
		}
		return [2]tensor.Batch[F]{tensor.MustNew[F](len(lengths), T), p}
	}
	x := ragged[F]{lengths: lengths, r: pair(), v: pair(), m: pair(), e: pair(), adv: pair(), ret: pair()}
	for b, n := range lengths {
		for t := range T {
			if t >= n {
				x.r[0].Set(b, t, F(math.NaN()))
				x.v[0].Set(b, t, F(math.Inf(1)))
				continue
			}
			m := 1.0
			if !prefix && t > 0 && t < n-1 && rng.IntN(4) == 0 {
				m = 0 // an observation token inside the row
			}
			vals := [...]float64{rng.NormFloat64(), rng.NormFloat64(), m, 0}
			if m == 1 && rng.IntN(3) == 0 {
				vals[3] = 1 // a turn may end anywhere on a valid token
			}
			for i, z := range []*[2]tensor.Batch[F]{&x.r, &x.v, &x.m, &x.e} {
				z[0].Set(b, t, F(vals[i]))
				z[1].Set(b, t, F(vals[i]))
			}
		}
		// A valid token followed by an observation token ends a turn.
		row, end := x.m[1].Row(b), x.e[1].Row(b)
		for t := range row {
			if row[t] == 1 && (t == len(row)-1 || row[t+1] == 0) {
				end[t] = 1
				x.e[0].Set(b, t, 1)
			}
		}
	}
	return x
}

// requireSameRows requires row b of the packed batch to hold the bits of
// the first n entries of row b of the padded one.
func requireSameRows[F tensor.Float](t *testing.T, name string, padded, packed tensor.Batch[F], lengths []int) {
	t.Helper()
	for b, n := range lengths {
		require.Equalf(t, padded.Row(b)[:n], packed.Row(b), "%s row %d", name, b)
	}
}

func checkPackedGAE[F tensor.Float](t *testing.T, rng *rand.Rand, lengths []int, prefix, whiten bool) {
	x := newRagged[F](rng, lengths, prefix)
	cfg := gae.Config{Gamma: 0.97, Lambda: 0.9, Whiten: whiten}
	bi := gae.DefaultBiLevelConfig()
	bi.Whiten = whiten
	ops := []struct {
		name string
		run  func(i int) error
	}{
		{"Advantages", func(i int) error { return gae.Advantages(x.adv[i], x.ret[i], x.r[i], x.v[i], x.m[i], cfg) }},
		{"BiLevel", func(i int) error { return gae.BiLevel(x.adv[i], x.ret[i], x.r[i], x.v[i], x.m[i], x.e[i], bi) }},
		{"TurnLevel", func(i int) error { return gae.TurnLevel(x.adv[i], x.ret[i], x.r[i], x.v[i], x.m[i], x.e[i], cfg) }},
	}
	for _, op := range ops {
		require.NoError(t, op.run(0), op.name+" padded")
		require.NoError(t, op.run(1), op.name+" packed")
		requireSameRows(t, op.name+" adv", x.adv[0], x.adv[1], lengths)
		requireSameRows(t, op.name+" ret", x.ret[0], x.ret[1], lengths)
	}
}

// TestPackedMatchesPadded: each estimator gives a packed batch the bits it
// gives the same rows padded to the longest, in float32 (which runs prefix
// masks four rows at a time where the processor has AVX2) and float64,
// with and without whitening.
func TestPackedMatchesPadded(t *testing.T) {
	for trial := range 6 {
		rng := rand.New(rand.NewPCG(uint64(trial), 3))
		lengths := make([]int, 3+rng.IntN(10))
		for b := range lengths {
			lengths[b] = rng.IntN(40)
		}
		lengths[0], lengths[len(lengths)-1] = 0, 1
		for _, prefix := range []bool{true, false} {
			for _, whiten := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/prefix=%v/whiten=%v", lengths, prefix, whiten), func(t *testing.T) {
					checkPackedGAE[float32](t, rng, lengths, prefix, whiten)
					checkPackedGAE[float64](t, rng, lengths, prefix, whiten)
				})
			}
		}
	}
}

func TestPackedAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newRagged[float32](rng, []int{0, 1, 300, 17, 64, 64, 5, 200, 33}, true)
	cfg := gae.Config{Gamma: 0.99, Lambda: 0.95, Whiten: true}
	run := func() {
		if err := gae.Advantages(x.adv[1], x.ret[1], x.r[1], x.v[1], x.m[1], cfg); err != nil {
			t.Fatal(err)
		}
	}
	run()
	require.Zero(t, testing.AllocsPerRun(20, run))
}

func TestPackedLayoutMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newRagged[float64](rng, []int{3, 0, 2}, true)
	err := gae.Advantages(x.adv[1], x.ret[1], x.r[1], x.v[0], x.m[1], gae.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrShape)
	require.ErrorContains(t, err, "values")
	err = gae.TurnEnds(x.e[1], x.m[1])
	require.ErrorIs(t, err, tensor.ErrShape, "TurnEnds takes padded batches only")
	require.ErrorContains(t, err, "packed")
}
