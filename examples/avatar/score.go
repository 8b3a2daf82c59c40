package main

import (
	"context"
	"fmt"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
)

// Scorer rewards a completion the way AVATAR's first stage does (Table 1):
// 0.5·R_format + 0.5·R_acc, R_format by the ±1 rule of Eq. 7
// (rewards.Format) and R_acc by Eq. 8's rMAE on the number in <answer>
// (rewards.RMAEVerifier), which also says whether it is an exact match.
type Scorer struct {
	acc  verifiers.Verifier
	comp rewards.Composite
	w    *World
}

func newScorer(w *World) (*Scorer, error) {
	v, err := rewards.RMAEVerifier(nil)
	if err != nil {
		return nil, err
	}
	return &Scorer{acc: v, comp: rewards.AVATARStage1(), w: w}, nil
}

// Score sets c's Format, Accuracy (rMAE), Exact and Reward.
func (s *Scorer) Score(c *Completion) error {
	text := Render(c.Tokens)
	c.Format = rewards.Format(text)
	res, err := s.acc.Verify(context.Background(), text, s.w.Answer(c.Prompt))
	if err != nil {
		return fmt.Errorf("scoring %q: %v", text, err)
	}
	c.Accuracy, c.Exact = res.Score, res.Correct
	c.Reward, err = s.comp.CombineNamed(map[string]float64{"format": c.Format, "acc": c.Accuracy})
	return err
}
