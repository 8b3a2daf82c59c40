package replay_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdvantagesGolden(t *testing.T) {
	for _, c := range golden.Load(t, "offpolicy_advantages") {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			rewards, baselines, cfg, err := conform.DecodeOffPolicyAdvantages(c.Request)
			require.NoError(t, err)
			var want struct {
				Advantages []float64 `json:"advantages"`
			}
			require.NoError(t, json.Unmarshal(c.Expected, &want))
			adv := make([]float64, len(rewards))
			_, err = replay.Advantages(adv, rewards, baselines, cfg)
			require.NoError(t, err)
			golden.CheckVec(t, "float64 advantages", adv, want.Advantages)

			r32, b32 := make([]float32, len(rewards)), make([]float32, len(rewards))
			for i := range rewards {
				r32[i], b32[i] = float32(rewards[i]), float32(baselines[i])
			}
			adv32 := make([]float32, len(rewards))
			_, err = replay.Advantages(adv32, r32, b32, cfg)
			require.NoError(t, err)
			got := make([]float64, len(adv32))
			for i, a := range adv32 {
				got[i] = float64(a)
			}
			golden.CheckVec(t, "float32 advantages", got, want.Advantages)
		})
	}
}

func TestAdvantagesByHand(t *testing.T) {
	for _, c := range []struct {
		name               string
		rewards, baselines []float64
		eps                float64
		want               []float64
		floored            bool
		nonzero            int
	}{
		// Rewards 0, 1, 2: σ_off = 1 (unbiased), so A = R − R̄.
		{"unit std", []float64{0, 1, 2}, []float64{0.5, 0.5, 0.5}, 0, []float64{-0.5, 0.5, 1.5}, false, 3},
		// Rewards 1, 3: σ_off = √2.
		{"two", []float64{1, 3}, []float64{1, 1}, 0, []float64{0, 2 / math.Sqrt2}, false, 1},
		{"eps", []float64{0, 1, 2}, []float64{1, 1, 1}, 1, []float64{-0.5, 0, 0.5}, false, 2},
		// The vanishing case Eq. 11 is for: all replayed rewards equal,
		// but R̄(q) differs, so the signal survives, divided by the floor
		// (the StdFloor guard, on in the cases below, eps 0 meaning it).
		{"equal rewards", []float64{1, 1, 1, 1}, []float64{0.25, 0.5, 1, 0.75}, 0, []float64{7.5, 5, 0, 2.5}, true, 3},
		{"one experience", []float64{0}, []float64{0.3}, 0, []float64{-3}, true, 1},
		// σ_off = 0.05/√2 is below the floor: the floor divides.
		{"small spread", []float64{1, 1.05}, []float64{0, 0}, 0, []float64{10, 10.5}, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			adv := make([]float64, len(c.rewards))
			cfg := replay.AdvantageConfig{Eps: c.eps}
			if c.floored {
				cfg.StdFloor = replay.DefaultStdFloor
			}
			st, err := replay.Advantages(adv, c.rewards, c.baselines, cfg)
			require.NoError(t, err)
			golden.CheckVec(t, "advantages", adv, c.want)
			assert.Equal(t, c.floored, st.Floored, "stats %+v, want Floored and non-zero", st)
			assert.Equal(t, c.nonzero, st.Nonzero, "stats %+v, want Floored and non-zero", st)
			assert.Equal(t, len(c.rewards), st.N, "stats %+v, want Floored and non-zero", st)
		})
	}
}

// As the off-policy spread goes to 0 Eq. 11 as written diverges; the floor
// keeps every advantage within |R − R̄|/StdFloor, continuously.
func TestAdvantagesBoundedAsSpreadVanishes(t *testing.T) {
	cfg := replay.DefaultAdvantageConfig()
	cfg.StdFloor = replay.DefaultStdFloor
	adv := make([]float64, 2)
	for _, d := range []float64{1, 0.1, 1e-3, 1e-6, 1e-12, 0} {
		st, err := replay.Advantages(adv, []float64{1, 1 + d}, []float64{0, 0}, cfg)
		require.NoError(t, err)
		bound := (1 + d) / cfg.StdFloor
		for i, a := range adv {
			require.LessOrEqual(t, math.Abs(a), bound+1e-9, "spread %g: advantage %d = %v exceeds the bound %v", d, i, a, bound)
		}
		if d <= 0.01 && !st.Floored {
			t.Errorf("spread %g: σ_off %v below the floor, but not Floored", d, st.Std)
		}
	}
	assert.InDelta(t, 10, adv[0], 1e-4, "spread 0: advantage, want (1 − 0)/0.1 = 10")
}

// The default is Eq. 11 as written: no floor, so a small spread divides
// R − R̄ by σ_off + ε itself, and an all-equal batch with ε = 0 is an error.
func TestAdvantagesDefaultIsUnfloored(t *testing.T) {
	cfg := replay.DefaultAdvantageConfig()
	require.Zero(t, cfg.StdFloor, "the default has a floor")
	adv := make([]float64, 2)
	for _, d := range []float64{1, 0.1, 1e-3} {
		st, err := replay.Advantages(adv, []float64{1, 1 + d}, []float64{0, 0}, cfg)
		require.NoError(t, err)
		sigma := d / math.Sqrt2
		assert.InDelta(t, 1/(sigma+cfg.Eps), adv[0], 1e-9/(sigma*sigma), "spread %g", d)
		assert.False(t, st.Floored, "spread %g: floored without a floor", d)
	}
	cfg.Eps = 0
	_, err := replay.Advantages(adv, []float64{1, 1}, []float64{0, 0}, cfg)
	assert.ErrorIs(t, err, tensor.ErrRange, "σ_off + ε = 0")
}

func TestAdvantagesInPlace(t *testing.T) {
	r := []float32{0, 1, 2}
	b := []float32{0.5, 0.5, 0.5}
	_, err := replay.Advantages(r, r, b, replay.AdvantageConfig{})
	require.NoError(t, err)
	assert.Equal(t, "[-0.5 0.5 1.5]", fmt.Sprint(r), "dst = rewards: %v", r)
	r = []float32{0, 1, 2}
	_, err = replay.Advantages(b, r, b, replay.AdvantageConfig{})
	require.NoError(t, err)
	assert.Equal(t, "[-0.5 0.5 1.5]", fmt.Sprint(b), "dst = baselines: %v", b)
}

func TestAdvantagesErrors(t *testing.T) {
	ok := []float64{1, 2}
	for _, c := range []struct {
		name               string
		dst, rewards, base []float64
		eps                float64
		kind               error
		arg                string
	}{
		{"no rewards", nil, nil, nil, 1e-6, tensor.ErrEmpty, "rewards"},
		{"baselines short", make([]float64, 2), ok, []float64{1}, 1e-6, tensor.ErrShape, "baselines"},
		{"dst short", make([]float64, 1), ok, ok, 1e-6, tensor.ErrShape, "dst"},
		{"NaN reward", make([]float64, 2), []float64{1, math.NaN()}, ok, 1e-6, tensor.ErrNonFinite, "rewards[1]"},
		{"Inf baseline", make([]float64, 2), ok, []float64{math.Inf(1), 0}, 1e-6, tensor.ErrNonFinite, "baselines[0]"},
		{"negative eps", make([]float64, 2), ok, ok, -1, tensor.ErrRange, "Eps"},
		{"NaN eps", make([]float64, 2), ok, ok, math.NaN(), tensor.ErrRange, "Eps"},
		{"spread overflows", make([]float64, 2), []float64{-1.7e308, 1.7e308}, ok, 1e-6, tensor.ErrRange, "rewards"},
		{"advantage overflows", make([]float64, 1), []float64{1.7e308}, []float64{-1.7e308}, 1e-6, tensor.ErrRange, "dst[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := replay.Advantages(c.dst, c.rewards, c.base, replay.AdvantageConfig{Eps: c.eps})
			require.ErrorIs(t, err, c.kind, "err naming %q", c.arg)
			assert.True(t, containsArg(err, c.arg), "err naming %q", c.arg)
		})
	}
	// A float64 advantage that float32 cannot hold.
	_, err := replay.Advantages(make([]float32, 1), []float32{3e38}, []float32{-3e38}, replay.AdvantageConfig{})
	assert.ErrorIs(t, err, tensor.ErrRange, "float32 overflow: %v", err)
}

// containsArg reports whether err names arg (with its index, if any).
func containsArg(err error, arg string) bool {
	return err != nil && strings.Contains(err.Error(), arg)
}
