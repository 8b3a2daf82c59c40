//go:build cuda || cudaemu

package cuda

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/tensor"
)

// TestUploadRejectsPacked: the device kernels index row b at b·T, so a
// packed batch (cu_seqlens) is an ErrShape error at Upload, the one door
// host batches come through, never a misread row.
func TestUploadRejectsPacked(t *testing.T) {
	c := device(t)
	x, err := tensor.Packed([]float32{1, 2, 3}, []int{0, 1, 3})
	require.NoError(t, err)
	buf, err := c.Upload(x)
	require.Nil(t, buf)
	require.ErrorIs(t, err, tensor.ErrShape)
	require.ErrorContains(t, err, "packed")
}
