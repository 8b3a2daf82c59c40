package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
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
	err = s.Score(c)
	require.NoError(t, err, "correct answer scored %+v", c)
	assert.Equal(t, float64(1), c.Format, "correct answer scored %+v", c)
	assert.Equal(t, float64(1), c.Accuracy, "correct answer scored %+v", c)
	assert.Equal(t, float64(1), c.Reward, "correct answer scored %+v", c)
	c = &Completion{Prompt: p, Tokens: []int{tokThink, tokThinkEnd, tokAnswer, 2, 1, 3, tokAnswerEnd, tokEOS}}
	err = s.Score(c)
	require.NoError(t, err, "wrong answer scored %+v", c)
	assert.Equal(t, float64(1), c.Format, "wrong answer scored %+v", c)
	assert.Equal(t, float64(0), c.Accuracy, "wrong answer scored %+v", c)
	assert.Equal(t, 0.5, c.Reward, "wrong answer scored %+v", c)
	c = &Completion{Prompt: p, Tokens: []int{tokAnswer, 2, 0, 3, tokAnswerEnd, tokEOS}}
	err = s.Score(c)
	require.NoError(t, err, "unformatted answer scored %+v", c)
	assert.Equal(t, float64(-1), c.Format, "unformatted answer scored %+v", c)
	assert.Equal(t, float64(1), c.Accuracy, "unformatted answer scored %+v", c)
	assert.Equal(t, float64(0), c.Reward, "unformatted answer scored %+v", c)
}

// TestPromptSet: a seed fixes the set; easy prompts have one-digit secrets
// and hard ones three, and the ids are distinct.
func TestPromptSet(t *testing.T) {
	a, b := newPromptSet(5, 10, 6), newPromptSet(5, 10, 6)
	require.True(t, slices.EqualFunc(a, b, func(x, y Prompt) bool { return x.Answer() == y.Answer() && x.IsHard == y.IsHard }), "the same seed drew different prompt sets")
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
	assert.Equal(t, 6, hard, "hard prompts, want 6")
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
		require.True(t, slices.Equal(f, g), "features differ with the secret: %v vs %v", f, g)
		for _, x := range f {
			require.GreaterOrEqual(t, x, 0, "feature out of [0)")
			require.Less(t, x, numFeatures, "feature out of [0)")
		}
		if k < hardLen {
			prefix = append(prefix, p.Secret[k])
		}
	}
}
