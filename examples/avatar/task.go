package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The task: a fixed set of prompts, each with a secret answer drawn at
// random when the set is made. An easy prompt's answer is one digit of
// four, a hard prompt's three digits of four (1 in 64 for a policy that
// answers at random). Responses are <think>…</think><answer>…</answer>.
//
// Nothing carries from one prompt to another: the secrets are independent,
// and the policy sees a prompt only as its id, so what it learns of one
// prompt's answer says nothing of another's. The only skill the prompts
// share is the format, and the easy prompts — solved early, their groups
// mixed — teach it. A hard prompt is learnt only from its own rare correct
// responses; groups of responses to it are all wrong, their rewards equal
// and their GRPO advantages zero, for long stretches: the vanishing-
// advantage regime AVATAR's replay is for. Accuracy is greedy accuracy over
// the whole prompt set, which is what "learning the set" means here; there
// is no held-out set, because there is nothing to generalise.

// numDigits is the size of the answer alphabet: digits 0..3, tokens 0..3.
const numDigits = 4

// Tokens of the vocabulary after the digits.
const (
	tokThink = numDigits + iota
	tokThinkEnd
	tokAnswer
	tokAnswerEnd
	tokFillA // three "thinking" tokens the policy may use freely
	tokFillB
	tokFillC
	tokEOS
	vocab
)

var tokenText = [vocab]string{"0", "1", "2", "3",
	"<think>", "</think>", "<answer>", "</answer>", "a", "b", "c", ""}

// Answer lengths of the two kinds of prompt.
const (
	easyLen = 1
	hardLen = 3
)

// maxLen bounds a response; a response that reaches it without an end is
// truncated (and so badly formatted).
const maxLen = 16

// Prompt is one task instance.
type Prompt struct {
	Index  int  // position in the prompt set
	IsHard bool // three answer digits instead of one
	Secret []int
}

// ID identifies a prompt across the run (the key of its VCRS score).
func (p Prompt) ID() uint64 { return uint64(p.Index) + 1 }

// Hard reports whether the prompt is a hard one.
func (p Prompt) Hard() bool { return p.IsHard }

// Answer is the number the prompt asks for.
func (p Prompt) Answer() string {
	var sb strings.Builder
	for _, d := range p.Secret {
		sb.WriteByte(byte('0' + d))
	}
	return sb.String()
}

// String renders the prompt.
func (p Prompt) String() string {
	kind := "easy"
	if p.IsHard {
		kind = "hard"
	}
	return fmt.Sprintf("prompt %d (%s)", p.Index, kind)
}

// newPromptSet draws easy prompts and hard ones, easy first.
func newPromptSet(seed uint64, easy, hard int) []Prompt {
	rng := rand.New(rand.NewPCG(seed, 0x7a5c))
	out := make([]Prompt, 0, easy+hard)
	for i := range easy + hard {
		p := Prompt{Index: i, IsHard: i >= easy}
		n := easyLen
		if p.IsHard {
			n = hardLen
		}
		p.Secret = make([]int, n)
		for k := range p.Secret {
			p.Secret[k] = rng.IntN(numDigits)
		}
		out = append(out, p)
	}
	return out
}

// Render turns response tokens into the text the verifiers score.
func Render(tokens []int) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteString(tokenText[t])
	}
	return sb.String()
}

// maxPrompts bounds the prompt set the feature layout has room for.
const maxPrompts = 512

// Feature layout of the policy's input: the prompt's id, its id together
// with how many answer digits were written (so that each prompt's digits
// can be learnt position by position), the prompt's kind, the previous
// token and the step. No feature tells anything about a secret.
const (
	featPrompt    = 0                                      // one per prompt
	featPromptPos = featPrompt + maxPrompts                // prompt·(hardLen+1) + digits written
	featKind      = featPromptPos + maxPrompts*(hardLen+1) // easy, hard
	featPrev      = featKind + 2                           // previous token, or vocab for the start
	featStep      = featPrev + vocab + 1                   // 0..maxLen−1
	numFeatures   = featStep + maxLen
)

// features writes the active features for the next token after prefix.
func features(dst []int, p Prompt, prefix []int) []int {
	dst = dst[:0]
	answered, inAnswer := 0, false
	for _, t := range prefix {
		switch {
		case t == tokAnswer:
			inAnswer = true
		case t == tokAnswerEnd:
			inAnswer = false
		case inAnswer && t < numDigits:
			answered++
		}
	}
	kind := 0
	if p.IsHard {
		kind = 1
	}
	prev := vocab
	if n := len(prefix); n > 0 {
		prev = prefix[n-1]
	}
	return append(dst, featPrompt+p.Index, featPromptPos+p.Index*(hardLen+1)+min(answered, hardLen),
		featKind+kind, featPrev+prev, featStep+len(prefix))
}
