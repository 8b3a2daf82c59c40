package main

import (
	"strings"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
)

// The vocabulary: the tags of the response format, four grounding words
// that say where the goal lies, the four actions, and the symbols of
// VAGEN's symbolic FrozenLake observation (Appendix C: _ frozen, O hole,
// G goal, P player, X player in a hole, * player on the goal). The policy
// scores every token at every step, so it can produce malformed
// responses.
const (
	tokThink = iota
	tokThinkEnd
	tokAnswer
	tokAnswerEnd
	tokGoalUp // goal-up … goal-right, in Action order
	tokGoalDown
	tokGoalLeft
	tokGoalRight
	tokUp // Up … Right, in Action order
	tokDown
	tokLeft
	tokRight
	tokFrozen
	tokHole
	tokGoal
	tokPlayer
	tokPlayerHole
	tokPlayerGoal
	vocabSize
)

var vocab = [vocabSize]string{
	"<think>", "</think>", "<answer>", "</answer>",
	"goal-up", "goal-down", "goal-left", "goal-right",
	"Up", "Down", "Left", "Right",
	"_", "O", "G", "P", "X", "*",
}

// render joins tokens into the text a verifier reads.
func render(tokens []int) string {
	var sb strings.Builder
	for i, t := range tokens {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(vocab[t])
	}
	return sb.String()
}

// observationTokens appends the symbolic grid of e's state, row by row:
// the tokens the environment puts between two turns, which the policy
// did not generate (loss mask 0).
func observationTokens(dst []int, e *episode) []int {
	for i, c := range e.Map.Cells {
		t := tokFrozen
		switch {
		case i == e.Pos && c == cellHole:
			t = tokPlayerHole
		case i == e.Pos && c == cellGoal:
			t = tokPlayerGoal
		case i == e.Pos:
			t = tokPlayer
		case c == cellHole:
			t = tokHole
		case c == cellGoal:
			t = tokGoal
		}
		dst = append(dst, t)
	}
	return dst
}

// parsed is what a turn's response means to the environment and to the
// turn reward.
type parsed struct {
	// FormatOK: <think>…</think><answer>…</answer> (verifiers.ThinkAnswer)
	// with exactly one action word as the answer, the structure VAGEN's
	// format reward asks for (its Free-Think strategy).
	FormatOK bool
	// Move is the parsed action, valid when FormatOK.
	Move action
	// Grounding is I_g of the turn: 1 when the think section is a single
	// grounding word naming a direction in which the goal lies (see
	// groundingScore).
	Grounding float64
}

// parseResponse reads one turn's response in state e (before the move).
func parseResponse(tokens []int, e *episode) parsed {
	text := render(tokens)
	var p parsed
	if verifiers.ThinkAnswer(text) {
		ans, _ := verifiers.AnswerTag(text)
		for a := range numActions {
			if strings.TrimSpace(ans) == a.String() {
				p.FormatOK, p.Move = true, a
			}
		}
	}
	if think, ok := verifiers.LastTag(text, "think"); ok {
		p.Grounding = groundingScore(strings.TrimSpace(think), e)
	}
	return p
}

// groundingScore is this example's rule-based stand-in for VAGEN's judged
// grounding score I_g (§5.1, a "continuous, normalized score from
// rule-based metrics" is allowed there): 1 if desc is one grounding word
// and the goal lies in that direction from the player (the goal above and
// to the left makes both goal-up and goal-left right), else 0.
func groundingScore(desc string, e *episode) float64 {
	n := e.Map.Size
	g := e.Map.GoalPos()
	dr, dc := g/n-e.Pos/n, g%n-e.Pos%n
	for a := range numActions {
		if desc != vocab[tokGoalUp+int(a)] {
			continue
		}
		adr, adc := a.delta()
		if adr*dr > 0 || adc*dc > 0 {
			return 1
		}
	}
	return 0
}

// Turn returns the turn's reward record for rewards.TurnRewards. VAGEN's
// world-modelling score I_w needs a <prediction> section, which these
// responses do not have, so it is 0.
func (p parsed) Turn(env float64) rewards.Turn {
	return rewards.Turn{Grounding: p.Grounding, FormatOK: p.FormatOK, Env: env}
}
