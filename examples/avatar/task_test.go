package main

import (
	"math/rand/v2"
	"testing"
)

func TestPromptAnswerAndRender(t *testing.T) {
	p := Prompt{Digits: [4]int{4, 0, 7, 2}, Query: 9} // positions 4 and 2
	if got := p.Answer(); got != "20" {
		t.Errorf("Answer = %q, want 20", got)
	}
	if !p.Hard() || (Prompt{Query: 2}).Hard() {
		t.Error("Hard misclassifies queries")
	}
	toks := []int{tokThink, tokFillB, tokThinkEnd, tokAnswer, 2, 0, tokAnswerEnd, tokEOS}
	if got := Render(toks); got != "<think>b</think><answer>20</answer>" {
		t.Errorf("Render = %q", got)
	}
	s, err := newScorer()
	if err != nil {
		t.Fatal(err)
	}
	c := &Completion{Prompt: p, Tokens: toks}
	if err := s.Score(c); err != nil || c.Format != 1 || c.Accuracy != 1 || c.Reward != 1 {
		t.Errorf("correct answer scored %+v, %v", c, err)
	}
	c = &Completion{Prompt: p, Tokens: []int{tokThink, tokThinkEnd, tokAnswer, 2, 1, tokAnswerEnd, tokEOS}}
	if err := s.Score(c); err != nil || c.Format != 1 || c.Accuracy != 0 || c.Reward != 0.5 {
		t.Errorf("wrong answer scored %+v, %v", c, err)
	}
	c = &Completion{Prompt: p, Tokens: []int{tokAnswer, 2, 0, tokAnswerEnd, tokEOS}}
	if err := s.Score(c); err != nil || c.Format != -1 || c.Accuracy != 1 || c.Reward != 0 {
		t.Errorf("unformatted answer scored %+v, %v", c, err)
	}
}

// TestFeaturesInRange: every feature of every prefix indexes the model's
// input, and the pointer feature names the digit the next answer digit
// copies.
func TestFeaturesInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var f []int
	for range 200 {
		p := randomPrompt(rng)
		prefix := []int{tokThink, tokFillA, tokThinkEnd, tokAnswer}
		for k, pos := range queries[p.Query] {
			f = features(f, p, prefix)
			pointer := -1
			for _, x := range f {
				if x < 0 || x >= numFeatures {
					t.Fatalf("feature %d out of [0, %d)", x, numFeatures)
				}
				if x >= featPointer {
					pointer = x - featPointer
				}
			}
			if pointer != p.Digits[pos] {
				t.Fatalf("answer digit %d of %+v: pointer %d, want %d", k, p, pointer, p.Digits[pos])
			}
			prefix = append(prefix, p.Digits[pos])
		}
	}
}
