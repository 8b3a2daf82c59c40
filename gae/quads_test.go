package gae_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// TestTokenRowsInFoursMatchOneByOne: the token-level scan runs rows four
// at a time when their masks are prefixes (float32 with AVX2); every row
// gives the bits it gives alone (a batch of one row takes the one-row
// loop), in both storages, with prefixes of every length, an empty and a
// full row, a row whose mask has a hole, and a batch that is not a
// multiple of four.
func TestTokenRowsInFoursMatchOneByOne(t *testing.T) {
	const B, T = 13, 37
	rng := rand.New(rand.NewPCG(7, 8))
	r, v, m := tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
	lengths := []int{T, 5, 0, 36, 17, T, 1, 20, 30, 30, 2, T, 9}
	for b := range B {
		for i := range T {
			r.Set(b, i, rng.NormFloat64())
			v.Set(b, i, rng.NormFloat64())
			if i < lengths[b] {
				m.Set(b, i, 1)
			} else {
				r.Set(b, i, math.NaN()) // padding holds anything
			}
		}
	}
	m.Set(7, 3, 0)  // holes: not prefixes, so their four rows run one by one
	m.Set(8, 25, 0) // (the bisection guesses a length; the full check finds the hole)
	cfg := gae.Config{Gamma: 0.99, Lambda: 0.95}
	rowsMatch[float64](t, r, v, m, cfg)
	rowsMatch[float32](t, convert[float32](r), convert[float32](v), convert[float32](m), cfg)
	// With AVX-512 the rows ran in eight lanes; now in fours as well.
	gae.WithoutAVX512(func() {
		rowsMatch[float32](t, convert[float32](r), convert[float32](v), convert[float32](m), cfg)
	})
}

func rowsMatch[F tensor.Float](t *testing.T, r, v, m tensor.Batch[F], cfg gae.Config) {
	t.Helper()
	advB, retB := tensor.MustNew[F](r.B, r.T), tensor.MustNew[F](r.B, r.T)
	require.NoError(t, gae.Advantages(advB, retB, r, v, m, cfg))
	adv, ret := advB.Data, retB.Data
	one := func(x tensor.Batch[F], b int) tensor.Batch[F] {
		y := tensor.MustNew[F](1, x.T)
		copy(y.Data, x.Row(b))
		return y
	}
	for b := range r.B {
		a1B, r1B := tensor.MustNew[F](1, r.T), tensor.MustNew[F](1, r.T)
		require.NoError(t, gae.Advantages(a1B, r1B, one(r, b), one(v, b), one(m, b), cfg))
		a1, r1 := a1B.Data, r1B.Data
		for i := range r.T {
			k := b*r.T + i
			if math.Float64bits(float64(adv[k])) != math.Float64bits(float64(a1[i])) ||
				math.Float64bits(float64(ret[k])) != math.Float64bits(float64(r1[i])) {
				t.Fatalf("row %d token %d: batch %v/%v, alone %v/%v", b, i, adv[k], ret[k], a1[i], r1[i])
			}
		}
	}
}

// TestTokenRowsInFoursNameTheRowThatOverflows: when one row of four
// overflows, in the common part or in its own last tokens, the error
// names that row.
func TestTokenRowsInFoursNameTheRowThatOverflows(t *testing.T) {
	for _, c := range []struct {
		bad  int
		lens [4]int
		want string
	}{
		{1, [4]int{8, 8, 8, 8}, "adv[1,"}, {2, [4]int{8, 4, 8, 6}, "adv[2,"},
		{1, [4]int{4, 8, 8, 8}, "adv[1,"}, {3, [4]int{8, 8, 2, 8}, "adv[3,"},
	} {
		r, v, m := tensor.MustNew[float32](4, 8), tensor.MustNew[float32](4, 8), tensor.MustNew[float32](4, 8)
		for b, n := range c.lens {
			for i := range n {
				m.Set(b, i, 1)
				r.Set(b, i, 1)
				if b == c.bad {
					r.Set(b, i, 3e38)
				}
			}
		}
		adv, ret := tensor.MustNew[float32](4, 8), tensor.MustNew[float32](4, 8)
		bothScans(func() {
			err := gae.Advantages(adv, ret, r, v, m, gae.DefaultConfig())
			require.ErrorIs(t, err, tensor.ErrRange)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestTokenRowsInFoursReportBadMasks: a mask entry that is neither 0 nor 1
// in a batch that runs in fours is named as before.
func TestTokenRowsInFoursReportBadMasks(t *testing.T) {
	r, v, m := tensor.MustNew[float32](4, 8), tensor.MustNew[float32](4, 8), tensor.MustNew[float32](4, 8)
	for b := range 4 {
		for i := range 6 {
			m.Set(b, i, 1)
		}
	}
	m.Set(2, 3, 0.5)
	bothScans(func() {
		err := gae.Advantages(tensor.MustNew[float32](4, 8), tensor.MustNew[float32](4, 8), r, v, m, gae.DefaultConfig())
		require.ErrorIs(t, err, tensor.ErrMask)
		require.ErrorContains(t, err, "mask[2,3]")
	})
}

// bothScans runs f with the token-level scan as the processor picks it and
// held to the four-row AVX2 kernel.
func bothScans(f func()) {
	f()
	gae.WithoutAVX512(f)
}
