//go:build amd64 && !purego

package appo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVectorWeightsAgree: on float32 distributions, the weights with the
// AVX-512 loops are those of the scalar loops, up to float32 rounding.
func TestVectorWeightsAgree(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 here")
	}
	r := rand.New(rand.NewPCG(31, 32))
	var w Weighter[float32]
	for n := range 60 {
		g := randomGroup(r, 2+r.IntN(6), 20, 1+r.IntN(6), []int{8 + r.IntN(90), 4096 + r.IntN(100)}[n%2])
		g.rewards[0], g.rewards[1] = 1, 0
		cfg := Config{Tau: 0.5, K1: 1 + r.IntN(6), K2: 1 + r.IntN(4), K3: 1 + r.IntN(6),
			Alpha: 1.7, Strategy: Strategy(r.IntN(3)), SumTol: 1e-5}
		in := to32Inputs(t, g.inputs(t))
		probs := in.Dists.(*Dense[float32]).probs
		want := make([]float32, probs.B)
		hasAVX512 = false
		_, err := w.Weights(want, in, cfg)
		hasAVX512 = true
		require.NoError(t, err)
		got := make([]float32, probs.B)
		_, err = w.Weights(got, in, cfg)
		require.NoError(t, err)
		require.InDeltaSlicef(t, want, got, 1e-5, "case %d", n)
	}
}
