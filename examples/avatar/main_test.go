package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestDeterministicAndLearning runs a shortened experiment twice: the same
// seed must give the same curves, and every method must end well above
// where it started on the held-out prompts.
func TestDeterministicAndLearning(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three policies")
	}
	set := settingsFor(true, 7)
	set.Steps, set.HeldOut = 40, 100
	first, err := experiment(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := experiment(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatal("the same seed gave different results")
	}
	for _, r := range first {
		start := r.Curve[0].Accuracy
		if r.Final < start+0.1 {
			t.Errorf("%s: held-out accuracy %.3f after %d steps, %.3f at the start", r.Name, r.Final, set.Steps, start)
		}
	}
}

// TestQuickPrintsJSONLast checks the contract of -quick: the last stdout
// line is one JSON object with the target and every run.
func TestQuickPrintsJSONLast(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-quick", "-steps", "3", "-png", ""}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var got struct {
		Target *float64 `json:"target"`
		Runs   map[string]struct {
			CompletionsToTarget *int     `json:"completions_to_target"`
			FinalAccuracy       *float64 `json:"final_accuracy"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if got.Target == nil || len(got.Runs) != 3 {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
	for _, name := range []string{"grpo", "dapo", "avatar"} {
		if r, ok := got.Runs[name]; !ok || r.FinalAccuracy == nil {
			t.Errorf("run %q missing or without final_accuracy: %q", name, lines[len(lines)-1])
		}
	}
}

func TestRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-seeds", "0"}, &out, &errOut); err == nil {
		t.Error("-seeds 0 accepted")
	}
	if err := run([]string{"-nope"}, &out, &errOut); err == nil {
		t.Error("unknown flag accepted")
	}
}

// TestReplayRoundTrip: a completion survives storage in the replay buffer.
func TestReplayRoundTrip(t *testing.T) {
	c := &Completion{Prompt: Prompt{Digits: [4]int{1, 2, 3, 9}, Query: 11}, Tokens: []int{tokThink, tokFillA, tokThinkEnd, tokAnswer, 3, 2, 1, tokAnswerEnd, tokEOS},
		Logp: []float64{-0.5, -1, -0.25, -0.125, -2, -3, -4, -0.5, -0.75}, Reward: 1, Version: 3}
	back, err := fromExperience(toExperience(c))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, want %+v", back, c)
	}
}
