package bench

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompareC builds the C reference and checks that it computes what
// rlpost computes on a small batch. It is skipped where no C compiler is
// installed.
func TestCompareC(t *testing.T) {
	res, err := CompareC(CompareOps, 4, 256, 2, 1, 2, io.Discard)
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.Len(t, res, len(CompareOps))
	for _, c := range res {
		require.Lessf(t, c.MaxAbsErr, 1e-5, "%s: C and rlpost differ", c.Op)
		require.InDeltaf(t, c.LossRlpost, c.LossC, 1e-6, "%s: loss", c.Op)
		require.Len(t, c.Rlpost, 1)
		require.Greater(t, c.C[0], 0.0)
	}
}

func TestCompareCRejectsUnknownOp(t *testing.T) {
	_, err := CompareC([]string{"tas_weights"}, 4, 256, 1, 1, 1, io.Discard)
	require.ErrorContains(t, err, "no C reference")
}
