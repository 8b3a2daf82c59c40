package gae_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// TestBiLevelLanesMatchOneRowLoop: with AVX-512, Bi-Level GAE of float32
// rows runs in the eight lanes of one kernel. On random batches (row
// counts around one and several pieces, odd lengths and rows 1024 bytes
// apart, turns of random lengths with masked observations between them,
// masked padding, holes, packed and padded layouts, both final-token rules,
// whitened or not) it gives the bits of the one-row loop, and on batches
// with a broken row (a turn end on a masked token, valid tokens after the
// last turn end, a mask or turn-end entry other than 0 and 1, a non-finite
// reward, an overflow) the same error.
func TestBiLevelLanesMatchOneRowLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 150 {
		B := []int{4, 7, 8, 9, 16, 17, 33}[trial%7]
		T := 1 + rng.IntN(200)
		if trial%5 == 0 {
			T = 256
		}
		lengths := make([]int, B)
		for b := range lengths {
			lengths[b] = rng.IntN(T + 1)
			if rng.IntN(4) == 0 {
				lengths[b] = T
			}
		}
		packed := trial%3 == 0
		off := make([]int, B+1)
		for b, n := range lengths {
			off[b+1] = off[b] + n
		}
		batch := func() tensor.Batch[float32] {
			if packed {
				x, err := tensor.Packed(make([]float32, off[B]), off)
				require.NoError(t, err)
				return x
			}
			return tensor.MustNew[float32](B, T)
		}
		r, v, m, e := batch(), batch(), batch(), batch()
		for b := range B {
			rr, vr, mr, er := r.Row(b), v.Row(b), m.Row(b), e.Row(b)
			for i := range rr {
				rr[i], vr[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*2)
			}
			n := lengths[b]
			if !packed && rng.IntN(2) == 0 {
				n = rng.IntN(n + 1) // masked padding in a padded row
			}
			for i := 0; i < n; {
				turn := 1 + rng.IntN(20)
				end := min(i+turn, n) - 1
				for j := i; j <= end; j++ {
					mr[j] = 1
				}
				er[end] = 1
				i = end + 1 + rng.IntN(5)
			}
			for i := n; i < len(rr); i++ {
				rr[i], vr[i] = float32(math.NaN()), float32(math.Inf(-1)) // never read
			}
		}
		broken := -1
		if trial%4 == 3 && B > 0 {
			broken = rng.IntN(B)
			mr, er, rr := m.Row(broken), e.Row(broken), r.Row(broken)
			valid := []int{}
			for i, x := range mr {
				if x == 1 {
					valid = append(valid, i)
				}
			}
			switch kind := rng.IntN(5); {
			case len(valid) == 0 || kind == 0:
				if len(mr) > 0 {
					i := rng.IntN(len(mr))
					mr[i], er[i] = 0, 1 // a turn end on a masked token
				} else {
					broken = -1
				}
			case kind == 1:
				er[valid[len(valid)-1]] = 0 // valid tokens after the last turn end
			case kind == 2:
				er[valid[rng.IntN(len(valid))]] = 0.5
			case kind == 3:
				rr[valid[rng.IntN(len(valid))]] = float32(math.Inf(1))
			default:
				i := valid[rng.IntN(len(valid))]
				rr[i] = 3e38
				if i > 0 {
					rr[i-1] = 3e38
				}
			}
		}
		for _, whiten := range []bool{false, true} {
			cfg := gae.BiLevelConfig{GammaToken: 0.99, LambdaToken: 0.95, GammaTurn: 0.9, LambdaTurn: 0.8, Whiten: whiten}
			if trial%2 == 1 {
				cfg.FinalToken = gae.TurnAdvantagePlusDelta
			}
			t.Run(fmt.Sprintf("trial%d/B%d/T%d/packed%v/whiten%v", trial, B, T, packed, whiten), func(t *testing.T) {
				adv, ret := batch(), batch()
				err := gae.BiLevel(adv, ret, r, v, m, e, cfg)
				adv1, ret1 := batch(), batch()
				var err1 error
				gae.WithoutAVX512(func() { err1 = gae.BiLevel(adv1, ret1, r, v, m, e, cfg) })
				if err1 != nil {
					require.Error(t, err)
					require.Equal(t, err1.Error(), err.Error())
					return
				}
				require.NoError(t, err)
				for i := range adv.Data {
					require.Equal(t, math.Float32bits(adv1.Data[i]), math.Float32bits(adv.Data[i]), "adv %d", i)
					require.Equal(t, math.Float32bits(ret1.Data[i]), math.Float32bits(ret.Data[i]), "ret %d", i)
				}
			})
		}
	}
}
