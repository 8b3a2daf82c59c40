package rewards

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// TurnConfig holds the coefficients of VAGEN's turn reward (§5.3):
//
//	r_t = r_reason + r_format + R(s_t, a_t),  r_reason = β_g·I_g + β_w·I_w
type TurnConfig struct {
	// BetaG weighs the grounding score I_g(G(o_t), s_t); BetaW the
	// world-modelling score I_w(W(o_t), s_{t+1}). 0 drops that term (the
	// zero TurnConfig is the environment reward alone, VAGEN-Base's).
	BetaG, BetaW float64
	// Format is r_format for a turn that follows the required structure;
	// 0 gives none.
	Format float64
}

// VAGENTurnConfig returns VAGEN-Full's coefficients: β_g = β_w = 0.5
// (§5.3) and a format reward of 0.5 per turn (Appendix, Tables 16–20).
func VAGENTurnConfig() TurnConfig { return TurnConfig{BetaG: 0.5, BetaW: 0.5, Format: 0.5} }

// Validate reports a coefficient that is not finite.
func (c TurnConfig) Validate() error {
	return checkFinite("TurnConfig.", field{"BetaG", c.BetaG}, field{"BetaW", c.BetaW}, field{"Format", c.Format})
}

// Turn is what one agent turn earned.
type Turn struct {
	// Grounding is I_g and WorldModeling is I_w, matching scores in [0, 1]
	// (1/0 from a judge's verdict, or a continuous rule-based score).
	Grounding, WorldModeling float64
	// FormatOK says the turn followed the reasoning structure.
	FormatOK bool
	// Env is R(s_t, a_t), the environment's reward (any finite value:
	// VAGEN's Sokoban gives 10 for success, −0.1 per unfinished step).
	Env float64
}

// TurnRewards writes r_t for each turn into dst (same length).
func TurnRewards[F tensor.Float](dst []F, turns []Turn, c TurnConfig) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("rewards: %w", err)
	}
	if len(dst) != len(turns) {
		return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d (turns)", len(dst), len(turns)))
	}
	for t, tr := range turns {
		switch {
		case !(tr.Grounding >= 0 && tr.Grounding <= 1):
			return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "turns.Grounding", tensor.At(t), "%v, want in [0, 1]", tr.Grounding))
		case !(tr.WorldModeling >= 0 && tr.WorldModeling <= 1):
			return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "turns.WorldModeling", tensor.At(t), "%v, want in [0, 1]", tr.WorldModeling))
		case math.IsNaN(tr.Env) || math.IsInf(tr.Env, 0):
			return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrNonFinite, "turns.Env", tensor.At(t), "%v", tr.Env))
		}
		r := c.BetaG*tr.Grounding + c.BetaW*tr.WorldModeling + tr.Env
		if tr.FormatOK {
			r += c.Format
		}
		dst[t] = F(r)
		if !tensor.IsFinite(dst[t]) {
			return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "dst", tensor.At(t), "%v overflows", r))
		}
	}
	return nil
}

// GroundingWorldModelingFormat reports whether response follows VAGEN's
// Grounding-WorldModeling format as Appendix A Table 5 and the training
// prompts of Appendix B.2 write it:
//
//	<think><observation>G(o_t)</observation><reasoning>r_t</reasoning><prediction>W(o_t)</prediction></think><answer>a_t</answer>
//
// It is verifiers.VAGENFormat with style "grounding_worldmodeling": each
// tag once and in this order, only white space between tags, every
// section non-blank. (§2.2 prints the strategy without <reasoning>; the
// format the agents were trained to produce has it.)
func GroundingWorldModelingFormat(response string) bool {
	ok, _ := verifiers.VAGENFormat(response, verifiers.VAGENGroundingWorldModeling)
	return ok
}

// JudgeTurn scores one Grounding-WorldModeling turn with a judge: I_g
// compares the <observation> content with the true current state, I_w the
// <prediction> content with the true next state (states in words), each
// call bounded by timeout (0: ctx only). A missing section scores 0
// without asking the judge. FormatOK comes from
// GroundingWorldModelingFormat; Env is left to the caller.
func JudgeTurn(ctx context.Context, j Judge, timeout time.Duration, response, state, nextState string) (Turn, error) {
	var t Turn
	t.FormatOK = GroundingWorldModelingFormat(response)
	if obs, ok := verifiers.LastTag(response, "observation"); ok {
		s, err := AskJudge(ctx, j, JudgeRequest{Response: strings.TrimSpace(obs), Reference: state}, timeout)
		if err != nil {
			return Turn{}, err
		}
		t.Grounding = s
	}
	if pred, ok := verifiers.LastTag(response, "prediction"); ok {
		s, err := AskJudge(ctx, j, JudgeRequest{Response: strings.TrimSpace(pred), Reference: nextState}, timeout)
		if err != nil {
			return Turn{}, err
		}
		t.WorldModeling = s
	}
	return t, nil
}
