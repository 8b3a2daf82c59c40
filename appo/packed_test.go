package appo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/tensor"
)

func testPackedScatter[F tensor.Float](t *testing.T) {
	// Responses of 2, 0 and 3 tokens; row 2 has an observation token.
	off := []int{0, 2, 2, 6}
	pmask, err := tensor.Packed([]F{1, 1, 1, 0, 1, 1}, off)
	require.NoError(t, err)
	mask := tensor.MustNew[F](3, 4)
	for b := range 3 {
		copy(mask.Row(b), pmask.Row(b))
	}
	w := []F{0.5, 2, 3, 4, 5}
	lengths := []int{2, 0, 3}
	dst := tensor.MustNew[F](3, 4)
	pdst, err := tensor.Packed(make([]F, 6), off)
	require.NoError(t, err)
	require.NoError(t, appo.Scatter(dst, mask, w, lengths))
	require.NoError(t, appo.Scatter(pdst, pmask, w, lengths))
	require.Equal(t, []F{0.5, 2, 3, 1, 4, 5}, pdst.Data)
	for b := range 3 {
		require.Equal(t, dst.Row(b)[:off[b+1]-off[b]], pdst.Row(b))
	}
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = appo.Scatter(pdst, pmask, w, lengths) }))
	require.ErrorIs(t, appo.Scatter(dst, pmask, w, lengths), tensor.ErrShape, "padded dst, packed mask")
}

// TestPackedScatter: Scatter lays weights out on a packed batch as on the
// same rows padded.
func TestPackedScatter(t *testing.T) {
	t.Run("float32", testPackedScatter[float32])
	t.Run("float64", testPackedScatter[float64])
}
