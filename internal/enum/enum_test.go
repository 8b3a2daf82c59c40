package enum

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/tensor"
)

func TestNameAndParse(t *testing.T) {
	names := []string{"a", "b", "c"}
	for i, n := range names {
		assert.Equal(t, n, Name(names, i, "T"))
		got, err := Parse(names, n, "pkg", "arg")
		require.NoError(t, err)
		assert.Equal(t, i, got)
	}
	assert.Equal(t, "T(3)", Name(names, 3, "T"))
	assert.Equal(t, "T(-1)", Name(names, -1, "T"))
	_, err := Parse(names, "d", "pkg", "arg")
	require.ErrorIs(t, err, tensor.ErrRange)
	var ae *tensor.ArgError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "arg", ae.Arg)
	assert.Contains(t, err.Error(), `pkg: arg: `)
	assert.Contains(t, err.Error(), `"d"`)
	assert.Contains(t, err.Error(), `["a" "b" "c"]`)
}
