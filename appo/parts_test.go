package appo

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

// to32Inputs converts a test group to float32, a trainer's storage type,
// which takes the AVX-512 kernels where the processor has them.
func to32Inputs(t testing.TB, in64 Inputs[float64]) Inputs[float32] {
	in := Inputs[float32]{Rewards: make([]float32, len(in64.Rewards)), Attention: make([]tensor.Batch[float32], len(in64.Attention))}
	for i := range in64.Rewards {
		in.Rewards[i] = float32(in64.Rewards[i])
		a := in64.Attention[i]
		in.Attention[i] = tensor.Batch[float32]{Shape: a.Shape, Data: make([]float32, len(a.Data))}
		for e, x := range a.Data {
			in.Attention[i].Data[e] = float32(x)
		}
	}
	d64 := in64.Dists.(*Dense[float64])
	probs := tensor.Batch[float32]{Shape: d64.probs.Shape, Data: make([]float32, len(d64.probs.Data))}
	for e, x := range d64.probs.Data {
		probs.Data[e] = float32(x)
	}
	lengths := make([]int, len(d64.start)-1)
	for i := range lengths {
		lengths[i] = d64.Len(i)
	}
	d, err := NewDense(probs, lengths)
	require.NoError(t, err)
	in.Dists = d
	return in
}

// TestSameWeightsAtAnyGOMAXPROCS: the block pass splits the vocabulary
// into parts that the workers take in any order; the weights are the same
// to the bit however many workers there are.
func TestSameWeightsAtAnyGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(51, 52))
	for n := range 4 {
		g := randomGroup(r, 3+r.IntN(5), 10, 2+r.IntN(4), 3000+r.IntN(9000))
		g.rewards[0], g.rewards[1] = 1, 0
		cfg := Config{Tau: 0.5, K1: 1 + r.IntN(4), K2: 1 + r.IntN(3), K3: 1 + r.IntN(5),
			Alpha: 1.7, Strategy: All, SumTol: 1e-5}
		in64 := g.inputs(t)
		in32 := to32Inputs(t, in64)
		var want64 []float64
		var want32 []float32
		for _, procs := range []int{1, 2, 3, 5, 8} {
			runtime.GOMAXPROCS(procs)
			var w64 Weighter[float64]
			got64 := make([]float64, in64.Dists.(*Dense[float64]).probs.B)
			res, err := w64.Weights(got64, in64, cfg)
			require.NoError(t, err)
			require.Positive(t, res.Weighted)
			var w32 Weighter[float32]
			got32 := make([]float32, len(got64))
			_, err = w32.Weights(got32, in32, cfg)
			require.NoError(t, err)
			if want64 == nil {
				want64, want32 = got64, got32
				continue
			}
			require.Equalf(t, want64, got64, "case %d, GOMAXPROCS %d: float64 weights", n, procs)
			require.Equalf(t, want32, got32, "case %d, GOMAXPROCS %d: float32 weights", n, procs)
		}
	}
}
