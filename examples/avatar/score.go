package main

import (
	"context"
	"fmt"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
)

// Scorer rewards a completion the way AVATAR's first stage does (Table 1):
// 0.5·format + 0.5·accuracy, format by AVATAR's ±1 rule (Eq. 7) and
// accuracy by the `number` verifier on the <answer> (the number written
// must equal the one asked for).
type Scorer struct {
	acc  verifiers.Verifier
	comp rewards.Composite
}

func newScorer() (*Scorer, error) {
	v, err := verifiers.New("number", nil)
	if err != nil {
		return nil, err
	}
	return &Scorer{acc: v, comp: rewards.AVATARStage1()}, nil
}

// Score sets c's Format, Accuracy and Reward.
func (s *Scorer) Score(c *Completion) error {
	text := Render(c.Tokens)
	c.Format = rewards.Format(text)
	res, err := s.acc.Verify(context.Background(), text, c.Prompt.Answer())
	if err != nil {
		return fmt.Errorf("scoring %q: %v", text, err)
	}
	c.Accuracy = res.Score
	c.Reward, err = s.comp.CombineNamed(map[string]float64{"format": c.Format, "acc": c.Accuracy})
	return err
}
