package tas_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// layouts returns an empty padded [B, longest] batch and an empty packed
// batch for rows of the given lengths.
func layouts[F tensor.Float](lengths []int) (padded, packed tensor.Batch[F]) {
	off := make([]int, len(lengths)+1)
	T := 0
	for b, n := range lengths {
		off[b+1] = off[b] + n
		T = max(T, n)
	}
	packed, err := tensor.Packed(make([]F, off[len(lengths)]), off)
	if err != nil {
		panic(err)
	}
	return tensor.MustNew[F](len(lengths), T), packed
}

func checkPackedTAS[F tensor.Float](t *testing.T, rng *rand.Rand, lengths []int, cfg tas.Config) {
	mask, pmask := layouts[F](lengths)
	adv, padv := layouts[F](lengths)
	for b, n := range lengths {
		for k := range n {
			m := F(min(1, rng.IntN(4))) // three in four tokens valid
			mask.Set(b, k, m)
			pmask.Set(b, k, m)
			a := F(rng.NormFloat64())
			adv.Set(b, k, a)
			padv.Set(b, k, a)
		}
	}
	seq := make([]F, len(lengths))
	for b := range seq {
		seq[b] = F(rng.NormFloat64())
	}
	dst, pdst := layouts[F](lengths)
	for _, op := range []struct {
		name string
		run  func(dst, adv, mask tensor.Batch[F]) error
	}{
		{"Weights", func(dst, _, mask tensor.Batch[F]) error { return tas.Weights(dst, mask, cfg) }},
		{"ApplySequence", func(dst, _, mask tensor.Batch[F]) error { return tas.ApplySequence(dst, seq, mask, cfg) }},
		{"ApplyTokens", func(dst, adv, mask tensor.Batch[F]) error { return tas.ApplyTokens(dst, adv, mask, cfg) }},
	} {
		require.NoError(t, op.run(dst, adv, mask), op.name)
		require.NoError(t, op.run(pdst, padv, pmask), op.name+" packed")
		for b, n := range lengths {
			require.Equalf(t, dst.Row(b)[:n], pdst.Row(b), "%s row %d", op.name, b)
		}
	}
	allocs := testing.AllocsPerRun(10, func() { _ = tas.ApplyTokens(pdst, padv, pmask, cfg) })
	require.Zero(t, allocs)
}

// TestPackedMatchesPadded: every op gives a packed batch the bits it gives
// the same rows padded to the longest, with no allocation.
func TestPackedMatchesPadded(t *testing.T) {
	for trial := range 4 {
		rng := rand.New(rand.NewPCG(uint64(trial), 9))
		lengths := make([]int, 2+rng.IntN(8))
		for b := range lengths {
			lengths[b] = rng.IntN(50)
		}
		lengths[0], lengths[1] = 0, 1
		for _, shape := range []tas.Curve{tas.Parabolic, tas.Inverse, tas.LinearDecay, tas.LinearIncline} {
			cfg := tas.Config{Lambda: 0.4, Shape: shape}
			t.Run(fmt.Sprintf("%v/%v", lengths, shape), func(t *testing.T) {
				checkPackedTAS[float32](t, rng, lengths, cfg)
				checkPackedTAS[float64](t, rng, lengths, cfg)
			})
		}
	}
}

func TestPackedLayoutMismatch(t *testing.T) {
	mask, pmask := layouts[float64]([]int{2, 0, 3})
	err := tas.Weights(mask, pmask, tas.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrShape)
	require.ErrorContains(t, err, "one layout")
}
