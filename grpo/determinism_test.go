package grpo_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

// TestWorkersDoNotChangeBits: the batch statistics the row engine forms
// from its rows' pieces (Stats' moments, ScaleBatch's σ, the REINFORCE++
// whitening) combine fixed pieces in a fixed order, so every advantage
// and every Stats field has the same bits at any GOMAXPROCS.
func TestWorkersDoNotChangeBits(t *testing.T) {
	const size, n = 16, 1 << 16
	r := make([]float32, n)
	scored := make([]bool, n)
	lengths := make([]int, n)
	base := make([]float32, n)
	for i := range r {
		r[i] = float32((i*7919)%13)/4 - 1.3
		if (i/size)%7 == 0 {
			r[i] = 1 // equal groups
		}
		scored[i] = (i*31)%11 != 0
		lengths[i] = 1 + (i*17)%23
		base[i] = float32((i*13)%5) / 5
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (i * 40503) % (n / size) // groups by id, shuffled
	}
	byID, err := grpo.ByID(ids)
	require.NoError(t, err)
	type call struct {
		name string
		g    grpo.Groups
		cfg  grpo.Config
		in   grpo.Inputs[float32]
	}
	var calls []call
	for _, g := range []struct {
		name string
		g    grpo.Groups
	}{{"contiguous", grpo.Contiguous(size)}, {"by id", byID}} {
		calls = append(calls,
			call{g.name + " GRPO", g.g, grpo.DefaultConfig(), grpo.Inputs[float32]{}},
			call{g.name + " GRPO batch σ", g.g, grpo.Config{Scale: grpo.ScaleBatch, Eps: 1e-6}, grpo.Inputs[float32]{}},
		)
		for e := grpo.RLOO; e <= grpo.PassK; e++ {
			in := grpo.Inputs[float32]{Scored: scored}
			switch e {
			case grpo.ReMax:
				in.Baseline = base
			case grpo.OPO, grpo.ReinforcePlusPlus:
				in.Lengths = lengths
			}
			calls = append(calls, call{g.name + " estimator", g.g, grpo.Config{Estimator: e, Eps: 1e-6}, in})
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range calls {
		var want []float32
		var wantSt grpo.Stats
		for _, procs := range []int{1, 2, 7} {
			runtime.GOMAXPROCS(procs)
			got := make([]float32, n)
			st, err := grpo.AdvantagesWith(got, r, c.g, c.cfg, c.in)
			require.NoError(t, err, "%s %+v", c.name, c.cfg)
			if want == nil {
				want, wantSt = got, st
				continue
			}
			require.Equal(t, wantSt, st, "%s %+v at GOMAXPROCS %d", c.name, c.cfg, procs)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %+v at GOMAXPROCS %d: [%d] = %v, at 1: %v", c.name, c.cfg, procs, i, got[i], want[i])
				}
			}
		}
	}
}

// TestFirstBadInputInIndexOrder: the inputs are checked group by group on
// the row engine, and the error names the first bad index in index order,
// as one pass over them would, whichever group or worker met it first.
func TestFirstBadInputInIndexOrder(t *testing.T) {
	const size, n = 8, 1 << 15
	r := make([]float64, n)
	lengths := make([]int, n)
	for i := range r {
		r[i] = float64(i % 5)
		lengths[i] = 1 + i%3
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (n - 1 - i) / size // later indices in earlier groups
	}
	byID, err := grpo.ByID(ids)
	require.NoError(t, err)
	lengths[20000] = 0
	r[30001] = math.NaN()
	lengths[9000] = -1
	for _, g := range []grpo.Groups{grpo.Contiguous(size), byID} {
		_, err := grpo.AdvantagesWith(make([]float64, n), r, g, grpo.Config{Estimator: grpo.OPO}, grpo.Inputs[float64]{Lengths: lengths})
		var ae *tensor.ArgError
		require.ErrorAs(t, err, &ae)
		require.ErrorIs(t, err, tensor.ErrRange)
		require.Contains(t, err.Error(), "[9000]")
	}
}

// TestPlainRowsMatchGeneralLoops: the rows of contiguous, fully scored
// groups take their own loops (four groups' moments at a time, the rule
// decided once per call); groups by id, laid out one by one, take the
// general ones. Both give the same bits and Stats for every estimator.
func TestPlainRowsMatchGeneralLoops(t *testing.T) {
	const size, groups = 6, 1030 // rows of 16 groups and a last of 6
	n := size * groups
	r := make([]float64, n)
	for i := range r {
		r[i] = float64((i*7919)%17)/3 - 2
		if (i/size)%9 == 0 {
			r[i] = 0.5 // equal groups
		}
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i / size
	}
	byID, err := grpo.ByID(ids)
	require.NoError(t, err)
	var cfgs []grpo.Config
	for e := grpo.GRPO; e <= grpo.PassK; e++ {
		if e == grpo.ReMax || e == grpo.OPO {
			continue // they read inputs, which plain rows do not have
		}
		cfgs = append(cfgs, grpo.Config{Estimator: e, Eps: 1e-6, Singleton: grpo.SingletonReward},
			grpo.Config{Estimator: e, Scale: grpo.ScaleBatch, Std: grpo.Population, Eps: 1e-6, Singleton: grpo.SingletonReward})
	}
	cfgs = append(cfgs, grpo.Config{Estimator: grpo.PassK, K: 3, Eps: 1e-6},
		grpo.Config{Estimator: grpo.GPG, GPGAlpha: grpo.GPGNonzero})
	for _, cfg := range cfgs {
		for _, g := range []grpo.Groups{byID} {
			want := make([]float64, n)
			wantSt, err := grpo.AdvantagesWith(want, r, g, cfg, grpo.Inputs[float64]{})
			require.NoError(t, err)
			got := make([]float64, n)
			st, err := grpo.AdvantagesWith(got, r, grpo.Contiguous(size), cfg, grpo.Inputs[float64]{})
			require.NoError(t, err)
			require.Equal(t, wantSt, st, "%+v", cfg)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("%+v: [%d] plain %v, general %v", cfg, i, got[i], want[i])
				}
			}
		}
	}
}
