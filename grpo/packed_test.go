package grpo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
)

func testPackedBroadcast[F tensor.Float](t *testing.T) {
	off := []int{0, 0, 1, 4, 9}
	flat := []F{1, 1, 0, 1, 0, 1, 1, 1, 1}
	pmask, err := tensor.Packed(flat, off)
	require.NoError(t, err)
	mask := tensor.MustNew[F](4, 5)
	for b := range 4 {
		copy(mask.Row(b), pmask.Row(b))
	}
	for i := 3; i < 5; i++ {
		mask.Data[2*5+i] = 0 // padding of row 2 stays masked
	}
	adv := []F{7, -0.5, 2, 1.25}
	dst := tensor.MustNew[F](4, 5)
	pdst, err := tensor.Packed(make([]F, 9), off)
	require.NoError(t, err)
	require.NoError(t, grpo.Broadcast(dst, adv, mask))
	require.NoError(t, grpo.Broadcast(pdst, adv, pmask))
	for b := range 4 {
		n := off[b+1] - off[b]
		require.Equal(t, dst.Row(b)[:n], pdst.Row(b))
	}
	require.Equal(t, []F{-0.5, 2, 0, 2, 0, 1.25, 1.25, 1.25, 1.25}, pdst.Data)
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = grpo.Broadcast(pdst, adv, pmask) }))

	require.ErrorIs(t, grpo.Broadcast(dst, adv, pmask), tensor.ErrShape, "padded dst, packed mask")

	n, err := grpo.MaskTruncated(pmask, []bool{true, false, true, false})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []F{1, 0, 0, 0, 0, 1, 1, 1, 1}, pmask.Data)
}

// TestPackedBroadcast: Broadcast and MaskTruncated on a packed batch
// (rows of 0, 1, 3 and 5 tokens) write what they write on the same rows
// padded.
func TestPackedBroadcast(t *testing.T) {
	t.Run("float32", testPackedBroadcast[float32])
	t.Run("float64", testPackedBroadcast[float64])
}
