package grpo_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/tensor"
)

// TestDecoupledGolden runs the torch vectors of multi_reward_advantages
// (testdata/gen/reference.py) through DecoupledAdvantages, in float64 and
// float32.
func TestDecoupledGolden(t *testing.T) {
	decoupled := 0
	for _, c := range golden.Load(t, "multi_reward_advantages") {
		cols, weights, g, cfg, isDecoupled, err := conform.DecodeMultiReward(c.Request)
		require.NoError(t, err)
		if !isDecoupled {
			continue // the plain path is Advantages, tested on its own
		}
		decoupled++
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			var want struct {
				Advantages []float64 `json:"advantages"`
			}
			require.NoError(t, json.Unmarshal(c.Expected, &want))
			got := make([]float64, len(cols[0]))
			_, err := grpo.DecoupledAdvantages(got, cols, weights, g, cfg)
			require.NoError(t, err)
			golden.CheckVec(t, "float64", got, want.Advantages)
			cols32 := make([][]float32, len(cols))
			for k, col := range cols {
				cols32[k] = make([]float32, len(col))
				for i, r := range col {
					cols32[k][i] = float32(r)
				}
			}
			got32 := make([]float32, len(got))
			_, err = grpo.DecoupledAdvantages(got32, cols32, weights, g, cfg)
			require.NoError(t, err)
			for i := range got32 {
				if !golden.Close(float64(got32[i]), want.Advantages[i]) && math.Abs(float64(got32[i])-want.Advantages[i]) > 1e-4 {
					t.Errorf("float32[%d] = %v, want %v", i, got32[i], want.Advantages[i])
				}
			}
		})
	}
	assert.Greater(t, decoupled, 10)
}

// TestDecoupledByHand: two groups of two, ε = 0. Reward 1 is (1, 0 | 1, 1),
// reward 2 (0, 10 | 5, 7). Within the groups, reward 1 normalises to
// (1/√2, −1/√2 | 0, 0) and reward 2 to (−1/√2, 1/√2 | −1/√2, 1/√2): the
// sums (0, 0 | −1/√2, 1/√2) leave the first group with nothing to learn,
// and over the batch (mean 0, unbiased std 1/√3) they become (0, 0 | −√1.5,
// √1.5). Summing first, (1, 10 | 6, 8), gives ±1/√2 in both groups.
func TestDecoupledByHand(t *testing.T) {
	cols := [][]float64{{1, 0, 1, 1}, {0, 10, 5, 7}}
	cfg := grpo.Config{}
	dst := make([]float64, 4)
	st, err := grpo.DecoupledAdvantages(dst, cols, nil, grpo.Contiguous(2), cfg)
	require.NoError(t, err)
	r := math.Sqrt(1.5)
	assert.InDeltaSlice(t, []float64{0, 0, -r, r}, dst, 1e-12)
	assert.Equal(t, 2, st.Groups)
	assert.Equal(t, 1, st.Vanishing)
	plain := make([]float64, 4)
	_, err = grpo.Advantages(plain, []float64{1, 10, 6, 8}, grpo.Contiguous(2), cfg)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{-math.Sqrt2 / 2, math.Sqrt2 / 2, -math.Sqrt2 / 2, math.Sqrt2 / 2}, plain, 1e-12)
	// Weights: w = (2, 0) is reward 1 alone, normalised twice.
	_, err = grpo.DecoupledAdvantages(dst, cols, []float64{2, 0}, grpo.Contiguous(2), cfg)
	require.NoError(t, err)
	s := math.Sqrt(3) / math.Sqrt2 // (√2, −√2, 0, 0) over its unbiased std √(4/3)
	assert.InDeltaSlice(t, []float64{s, -s, 0, 0}, dst, 1e-12)
}

func TestDecoupledRejects(t *testing.T) {
	cols := [][]float64{{1, 0}, {0, 1}}
	dst := make([]float64, 2)
	g := grpo.Contiguous(2)
	for name, c := range map[string]struct {
		dst  []float64
		cols [][]float64
		w    []float64
		cfg  grpo.Config
		kind error
	}{
		"rloo":         {dst, cols, nil, grpo.Config{Estimator: grpo.RLOO}, tensor.ErrRange},
		"batch scale":  {dst, cols, nil, grpo.Config{Scale: grpo.ScaleBatch}, tensor.ErrRange},
		"no rewards":   {dst, nil, nil, grpo.Config{}, tensor.ErrEmpty},
		"weights":      {dst, cols, []float64{1}, grpo.Config{}, tensor.ErrShape},
		"nan weight":   {dst, cols, []float64{1, math.NaN()}, grpo.Config{}, tensor.ErrRange},
		"short reward": {dst, [][]float64{{1, 0}, {1}}, nil, grpo.Config{}, tensor.ErrShape},
		"overlap":      {cols[1], cols, nil, grpo.Config{}, tensor.ErrOverlap},
		"empty dst":    {nil, [][]float64{{}}, nil, grpo.Config{}, tensor.ErrEmpty},
		"nan reward":   {dst, [][]float64{{1, math.NaN()}}, nil, grpo.Config{}, tensor.ErrNonFinite},
	} {
		_, err := grpo.DecoupledAdvantages(c.dst, c.cols, c.w, g, c.cfg)
		assert.ErrorIs(t, err, c.kind, name)
	}
}

func TestDecoupledAllocatesNothing(t *testing.T) {
	cols := [][]float32{make([]float32, 64), make([]float32, 64)}
	for i := range cols[0] {
		cols[0][i], cols[1][i] = float32(i%3), float32(i%7)
	}
	dst := make([]float32, 64)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := grpo.DecoupledAdvantages(dst, cols, nil, grpo.Contiguous(8), grpo.TRLDefaults()); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
