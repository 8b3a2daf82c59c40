package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPromptAnswerAndRender(t *testing.T) {
	p := Prompt{Index: 3, IsHard: true, Secret: []int{2, 0, 3}}
	if got := p.Answer(); got != "203" {
		t.Errorf("Answer = %q, want 203", got)
	}
	toks := []int{tokThink, tokFillB, tokThinkEnd, tokAnswer, 2, 0, 3, tokAnswerEnd, tokEOS}
	if got := Render(toks); got != "<think>b</think><answer>203</answer>" {
		t.Errorf("Render = %q", got)
	}
	s, err := newScorer()
	require.NoError(t, err)
	c := &Completion{Prompt: p, Tokens: toks}
	if err := s.Score(c); err != nil || c.Format != 1 || c.Accuracy != 1 || c.Reward != 1 {
		t.Errorf("correct answer scored %+v, %v", c, err)
	}
	c = &Completion{Prompt: p, Tokens: []int{tokThink, tokThinkEnd, tokAnswer, 2, 1, 3, tokAnswerEnd, tokEOS}}
	if err := s.Score(c); err != nil || c.Format != 1 || c.Accuracy != 0 || c.Reward != 0.5 {
		t.Errorf("wrong answer scored %+v, %v", c, err)
	}
	c = &Completion{Prompt: p, Tokens: []int{tokAnswer, 2, 0, 3, tokAnswerEnd, tokEOS}}
	if err := s.Score(c); err != nil || c.Format != -1 || c.Accuracy != 1 || c.Reward != 0 {
		t.Errorf("unformatted answer scored %+v, %v", c, err)
	}
}

// TestPromptSet: a seed fixes the set; easy prompts have one-digit secrets
// and hard ones three, and the ids are distinct.
func TestPromptSet(t *testing.T) {
	a, b := newPromptSet(5, 10, 6), newPromptSet(5, 10, 6)
	if !slices.EqualFunc(a, b, func(x, y Prompt) bool { return x.Answer() == y.Answer() && x.IsHard == y.IsHard }) {
		t.Fatal("the same seed drew different prompt sets")
	}
	hard, ids := 0, map[uint64]bool{}
	for _, p := range a {
		want := easyLen
		if p.Hard() {
			want, hard = hardLen, hard+1
		}
		if len(p.Secret) != want || ids[p.ID()] {
			t.Fatalf("%v: secret %v, id %d", p, p.Secret, p.ID())
		}
		ids[p.ID()] = true
	}
	if hard != 6 {
		t.Errorf("%d hard prompts, want 6", hard)
	}
}

// TestFeaturesHideTheSecret: every feature indexes the model's input, and
// two prompts that differ only in their secrets have the same features —
// nothing the policy sees tells it an answer.
func TestFeaturesHideTheSecret(t *testing.T) {
	p := Prompt{Index: maxPrompts - 1, IsHard: true, Secret: []int{0, 1, 2}}
	q := p
	q.Secret = []int{3, 3, 3}
	prefix := []int{tokThink, tokFillA, tokThinkEnd, tokAnswer}
	var f, g []int
	for k := range hardLen + 1 {
		f, g = features(f, p, prefix), features(g, q, prefix)
		if !slices.Equal(f, g) {
			t.Fatalf("features differ with the secret: %v vs %v", f, g)
		}
		for _, x := range f {
			if x < 0 || x >= numFeatures {
				t.Fatalf("feature %d out of [0, %d)", x, numFeatures)
			}
		}
		if k < hardLen {
			prefix = append(prefix, p.Secret[k])
		}
	}
}
