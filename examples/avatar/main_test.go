package main

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runOnce trains one short run of name on seed's S0 policy.
func runOnce(t *testing.T, seed uint64, name string, steps int) RunResult {
	t.Helper()
	set := settingsFor(seed)
	set.Steps, set.EvalEvery, set.Train, set.Held, set.SFTSteps = steps, 5, 200, 40, 20
	var st seedState
	st.get(set)
	m, err := newMethod(name, set)
	require.NoError(t, err)
	res, err := train(m, st.base, &st.world, st.pool, set, nil)
	require.NoError(t, err)
	return res
}

// TestDeterministic: the same seed gives the same curves, for GRPO and for
// AVATAR (whose replay, hints and diagnostics depend on every draw).
func TestDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("trains policies")
	}
	for _, name := range []string{"grpo", "avatar"} {
		first, second := runOnce(t, 7, name, 12), runOnce(t, 7, name, 12)
		require.Equal(t, first, second, "%s: the same seed gave different results", name)
	}
}

// TestAvatarReplaysAcrossPrompts: AVATAR's replayed responses come from the
// buffer's tiers across prompts, get Eq. 11 advantages, and the buffer
// fills its three tiers; without replay there are no diagnostics of it.
func TestAvatarReplaysAcrossPrompts(t *testing.T) {
	if testing.Short() {
		t.Skip("trains policies")
	}
	res := runOnce(t, 3, "avatar", 20)
	d := res.Diag
	require.NotNil(t, d)
	assert.Positive(t, d.Age[2], "no replayed response older than one version")
	assert.Positive(t, d.MaxAbsAdv, "every Eq. 11 advantage was 0")
	assert.Greater(t, d.AccShare+0, 0.0)
	assert.LessOrEqual(t, d.AccShare, 1.0)
	last := d.Tiers[len(d.Tiers)-1]
	for tier, n := range last.Len {
		assert.Positive(t, n, "tier %v empty at step %d", replay.Tier(tier), last.Step)
	}
	none := runOnce(t, 3, "avatar_no_replay", 5)
	assert.Equal(t, [3]float64{}, none.Diag.Age, "no_replay replayed something")
}

// TestQuickPrintsJSONLast checks the contract of -quick: three seeds, the
// main runs and the ablations, and a last stdout line that is one JSON
// object with the target and, per run, completions to target (a number or
// null), final accuracy and the zero-advantage fraction.
func TestQuickPrintsJSONLast(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-quick", "-steps", "2", "-png", ""}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "3 seeds", "-quick did not run 3 seeds")
	assert.Contains(t, errOut.String(), "[24/24]", "no plain progress line per run on a non-terminal")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, `{"target":`), "last line %q", last)
	var got struct {
		Target *float64                              `json:"target"`
		Runs   map[string]map[string]json.RawMessage `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(last), &got), "last line %q", last)
	want := slices.Concat(mainRuns, ablations)
	require.NotNil(t, got.Target)
	require.Len(t, got.Runs, len(want), "last line %q", last)
	for _, name := range want {
		r, ok := got.Runs[name]
		require.True(t, ok, "run %q missing: %q", name, last)
		for _, field := range []string{"completions_to_target", "final_accuracy", "zero_adv_fraction"} {
			assert.Contains(t, r, field, "run %q: %q", name, last)
		}
		var f float64
		require.NoError(t, json.Unmarshal(r["zero_adv_fraction"], &f))
		assert.True(t, f >= 0 && f <= 1, "run %q: zero_adv_fraction %v", name, f)
	}
}

func TestRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{{"-seeds", "-1"}, {"-nope"}, {"-runs", "grpo,nope"}} {
		assert.Error(t, run(args, &out, &errOut), "%v accepted", args)
	}
}

// TestReplayRoundTrip: a completion survives storage in the replay buffer,
// its format, accuracy and hint included.
func TestReplayRoundTrip(t *testing.T) {
	w := newWorld(1)
	pool := newPool(1, &w, 6, 2)
	p := pool[3]
	toks := wellFormed(&w, p, w.SkillMethod[p.Skill], w.Work(w.SkillMethod[p.Skill], p))
	c := &Completion{Prompt: p, Tokens: toks, Logp: make([]float64, len(toks)), Reward: 1, Format: 1, Accuracy: 1, Exact: true, Hint: 5, Version: 3}
	for i := range c.Logp {
		c.Logp[i] = -float64(i%7) / 8
	}
	back, err := fromExperience(toExperience(c), pool)
	require.NoError(t, err)
	assert.Equal(t, c, back, "round trip")
	_, err = fromExperience(replay.Experience{Prompt: 99}, pool)
	assert.Error(t, err, "an experience of an unknown prompt")
}

func TestMedianCI(t *testing.T) {
	m, lo, hi := medianCI([]float64{3, 3, 3, 3}, 1)
	assert.Equal(t, [3]float64{3, 3, 3}, [3]float64{m, lo, hi}, "constant data")
	x := []float64{0.1, 0.5, 0.2, 0.9, 0.4, 0.3, 0.8, 0.6, 0.7, 0.0}
	m, lo, hi = medianCI(x, 2)
	assert.InDelta(t, 0.45, m, 1e-12)
	assert.True(t, lo <= m && m <= hi && lo >= 0 && hi <= 0.9, "interval [%v, %v] around %v", lo, hi, m)
	assert.True(t, math.IsInf(median([]float64{1, math.Inf(1), math.Inf(1)}), 1), "a majority never reached: the median is ∞")
	assert.Equal(t, 4.0, median([]float64{1, 3, 5, math.Inf(1)}), "one never reached of four")
}
