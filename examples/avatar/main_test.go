package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeterministic runs shortened grpo and avatar runs twice: the same
// seed must give the same curves.
func TestDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("trains policies")
	}
	set := settingsFor(7)
	set.Steps = 30
	for _, name := range []string{"grpo", "avatar"} {
		first, err := experiment(set, name, nil)
		require.NoError(t, err)
		second, err := experiment(set, name, nil)
		require.NoError(t, err)
		require.Equal(t, second, first, "%s: the same seed gave different results", name)
	}
}

// TestQuickPrintsJSONLast checks the contract of -quick: three seeds, the
// four main runs, and a last stdout line that is one JSON object with the
// target and, per run, completions to target (a number or null), final
// accuracy and the zero-advantage fraction.
func TestQuickPrintsJSONLast(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-quick", "-steps", "3", "-png", ""}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "3 seeds", "-quick did not run 3 seeds")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	var got struct {
		Target *float64                              `json:"target"`
		Runs   map[string]map[string]json.RawMessage `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(last), &got), "last line %q", last)
	if got.Target == nil || len(got.Runs) != len(mainRuns) {
		t.Fatalf("last line %q", last)
	}
	for _, name := range mainRuns {
		r, ok := got.Runs[name]
		require.True(t, ok, "run %q missing: %q", name, last)
		for _, field := range []string{"completions_to_target", "final_accuracy", "zero_adv_fraction"} {
			if _, ok := r[field]; !ok {
				t.Errorf("run %q lacks %q: %q", name, field, last)
			}
		}
		var f float64
		err := json.Unmarshal(r["zero_adv_fraction"], &f)
		require.NoError(t, err, "run %q: zero_adv_fraction %s", name, r["zero_adv_fraction"])
		assert.GreaterOrEqual(t, f, 0.0, "run %q: zero_adv_fraction %s", name, r["zero_adv_fraction"])
		assert.LessOrEqual(t, f, 1.0, "run %q: zero_adv_fraction %s", name, r["zero_adv_fraction"])
	}
}

func TestRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{{"-seeds", "-1"}, {"-nope"}, {"-runs", "grpo,nope"}} {
		assert.Error(t, run(args, &out, &errOut), "%v accepted", args)
	}
}

// TestReplayRoundTrip: a completion survives storage in the replay buffer.
func TestReplayRoundTrip(t *testing.T) {
	prompts := newPromptSet(1, 2, 2)
	c := &Completion{Prompt: prompts[3], Tokens: []int{tokThink, tokFillA, tokThinkEnd, tokAnswer, 3, 2, 1, tokAnswerEnd, tokEOS},
		Logp: []float64{-0.5, -1, -0.25, -0.125, -2, -3, -4, -0.5, -0.75}, Reward: 1, Version: 3}
	back, err := fromExperience(toExperience(c), prompts)
	require.NoError(t, err)
	assert.Equal(t, c, back, "round trip")
}
