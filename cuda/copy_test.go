//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/tensor"
)

// TestCopyFromBuffer copies on the device, bit for bit, and refuses a
// Buffer of another shape or the destination itself.
func TestCopyFromBuffer(t *testing.T) {
	c := device(t)
	want := []float32{1, -2, 3.5, float32(1e-30), 0, 7}
	x, err := tensor.FromSlice(want, 2, 3)
	require.NoError(t, err)
	src := upload(t, c, x)
	dst := output(t, c, 2, 3)
	require.NoError(t, dst.CopyFromBuffer(src))
	assert.Equal(t, want, download(t, dst))

	other := output(t, c, 3, 2)
	err = other.CopyFromBuffer(src)
	require.Error(t, err)
	assert.True(t, errors.Is(err, tensor.ErrShape), "%v", err)

	err = dst.CopyFromBuffer(dst)
	require.Error(t, err)
	assert.True(t, errors.Is(err, tensor.ErrRange), "%v", err)
}
