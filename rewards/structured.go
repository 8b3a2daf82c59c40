package rewards

import (
	"errors"
	"fmt"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// StructuredScore is VAGEN's anti-hacking reasoning reward for one
// response (Appendix D.1.2).
type StructuredScore struct {
	// F1 is the F1 score of the response's structured dictionary against
	// the ground-truth dictionary (verifiers.StructuredF1).
	F1 float64
	// Repeated says the response's sentence is among the most frequent of
	// the history; Penalty is −RepetitionConfig.Penalty when it is and F1
	// is below the threshold, else 0.
	Repeated bool
	Penalty  float64
	// Reward = F1 + Penalty.
	Reward float64
}

// ScoreStructured computes VAGEN's structured reasoning reward: the F1 of
// dict (the structured dictionary a parser model extracted from the
// response's reasoning) against truth (the ground-truth dictionary of the
// state), plus the repetition penalty of tracker for sentence (the
// response's reasoning sentence). dict that is not a dictionary, or is
// over the parser's limits, scores F1 = 0; truth must be one (an error
// wrapping verifiers.ErrSyntax or verifiers.ErrTooLarge otherwise). A nil
// tracker applies no penalty. ScoreStructured only reads the tracker:
// Record the step's sentences after scoring them.
func ScoreStructured(tracker *RepetitionTracker, sentence, dict, truth string) (StructuredScore, error) {
	gold, err := verifiers.StructuredFacts(truth)
	if err != nil {
		var ae *tensor.ArgError
		if errors.As(err, &ae) {
			c := *ae
			c.Arg = "truth"
			return StructuredScore{}, fmt.Errorf("rewards: %w", &c)
		}
		return StructuredScore{}, fmt.Errorf("rewards: truth: %w", err)
	}
	var s StructuredScore
	if facts, err := verifiers.StructuredFacts(dict); err == nil {
		s.F1 = verifiers.StructuredF1(gold, facts)
	} else if !errors.Is(err, verifiers.ErrSyntax) && !errors.Is(err, verifiers.ErrTooLarge) {
		return StructuredScore{}, fmt.Errorf("rewards: dict: %w", err)
	}
	if tracker != nil {
		if s.Penalty, s.Repeated, err = tracker.Penalty(sentence, s.F1); err != nil {
			return StructuredScore{}, err
		}
	}
	s.Reward = s.F1 + s.Penalty
	return s, nil
}
