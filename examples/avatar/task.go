package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The task: a pool of prompts, each an instance of one of a few skills.
// A skill is a digit rule r(acc, x) = (a·acc + b·x + c) mod 10 applied to
// the prompt's four operands in turn, from acc = 0; the answer is the last
// two accumulators read as a two-digit number. Every skill is carried out
// by one of eight methods (rules); which method a skill needs, and what
// each method's rule is, are drawn per seed and never shown to the policy.
//
// A response is 71 tokens, 64 of them reasoning:
//
//	<think> P x1 x2 x3 x4 e1 … e55 w1 w2 w3 w4 </think><answer> d1 d2 </answer> EOS
//
// P is the plan — the method token (start of the sequence); x1…x4 restate
// the operands; e1…e55 is the "evidence", the operands echoed in turn; w1…w4
// are the accumulators of the chosen method's rule (synthesis: the end of
// the reasoning); d1 d2 copy w3 w4 as the answer. Whether the answer is
// right is decided at the two ends of the reasoning — the plan and the
// synthesis — which is TAS's hypothesis (AVATAR §4.2) built in: the middle
// carries no decision.
//
// The skills are shared: prompts of a skill differ in their operands only,
// so what a prompt teaches (the plan for its skill, entries of its
// method's rule table) holds for all its neighbours, held-out prompts
// included. Rewards are AVATAR's stage 1, 0.5·R_format (Eq. 7) + 0.5·R_acc
// with R_acc the rMAE of Eq. 8 on the two-digit number; accuracy is exact
// match, greedy, on held-out prompts.

const (
	numDigits   = 10
	numMethods  = 8
	numSkills   = 4
	numOperands = 4
	evidenceLen = 55
)

// Tokens: the digits, the method tokens, then the tags.
const (
	tokMethod0   = numDigits
	tokThink     = tokMethod0 + numMethods
	tokThinkEnd  = tokThink + 1
	tokAnswer    = tokThink + 2
	tokAnswerEnd = tokThink + 3
	tokEOS       = tokThink + 4
	vocab        = tokThink + 5
)

// Positions of the well-formed response.
const (
	posPlan     = 1
	posRestate  = 2
	posEvidence = posRestate + numOperands
	posWork     = posEvidence + evidenceLen
	posThinkEnd = posWork + numOperands
	posAnswer   = posThinkEnd + 1
	posDigits   = posAnswer + 1
	posEnd      = posDigits + 2
	posEOS      = posEnd + 1
	// reasoningLen is the tokens between <think> and </think>.
	reasoningLen = posThinkEnd - posPlan
	// maxLen bounds a response; one that reaches it without EOS is
	// truncated (and so badly formatted).
	maxLen = posEOS + 2
)

// World is one seed's hidden truth: each method's rule and each skill's
// method.
type World struct {
	A, B, C     [numMethods]int
	SkillMethod [numSkills]int
}

func newWorld(seed uint64) World {
	rng := rand.New(rand.NewPCG(seed, 0x3d1))
	units := [...]int{1, 3, 7, 9} // invertible mod 10: every operand matters
	var w World
	for m := range numMethods {
		w.A[m], w.B[m], w.C[m] = units[rng.IntN(4)], units[rng.IntN(4)], rng.IntN(10)
	}
	perm := rng.Perm(numMethods)
	copy(w.SkillMethod[:], perm[:numSkills])
	return w
}

// Step applies method m's rule.
func (w *World) Step(m, acc, x int) int { return (w.A[m]*acc + w.B[m]*x + w.C[m]) % 10 }

// Prompt is one task instance.
type Prompt struct {
	Index    int // position in the pool (training prompts first)
	Skill    int
	Operands [numOperands]int
	Held     bool // held out: evaluated, never trained on
}

// ID identifies a prompt across the run (the key of its VCRS score).
func (p Prompt) ID() uint64 { return uint64(p.Index) + 1 }

// Work returns the accumulators of method m on p's operands.
func (w *World) Work(m int, p Prompt) (acc [numOperands]int) {
	a := 0
	for i, x := range p.Operands {
		a = w.Step(m, a, x)
		acc[i] = a
	}
	return acc
}

// Answer is the reference answer of p as two digits.
func (w *World) Answer(p Prompt) string {
	acc := w.Work(w.SkillMethod[p.Skill], p)
	return fmt.Sprintf("%d%d", acc[numOperands-2], acc[numOperands-1])
}

func (p Prompt) String() string {
	return fmt.Sprintf("prompt %d (skill %d, operands %v)", p.Index, p.Skill, p.Operands)
}

// newPool draws train + held distinct prompts, skills in turn, skipping
// those whose answer is 00 (Eq. 8's rMAE needs a non-zero reference).
func newPool(seed uint64, w *World, train, held int) []Prompt {
	rng := rand.New(rand.NewPCG(seed, 0x7a5c))
	seen := map[[numOperands + 1]int]bool{}
	out := make([]Prompt, 0, train+held)
	for len(out) < train+held {
		p := Prompt{Index: len(out), Skill: len(out) % numSkills, Held: len(out) >= train}
		for i := range p.Operands {
			p.Operands[i] = rng.IntN(numDigits)
		}
		key := [numOperands + 1]int{p.Skill, p.Operands[0], p.Operands[1], p.Operands[2], p.Operands[3]}
		if seen[key] || w.Answer(p) == "00" {
			continue
		}
		seen[key] = true
		out = append(out, p)
	}
	return out
}

// wellFormed returns the well-formed response with plan m and the given
// work digits (the answer copies the last two).
func wellFormed(w *World, p Prompt, m int, work [numOperands]int) []int {
	out := make([]int, 0, posEOS+1)
	out = append(out, tokThink, tokMethod0+m)
	out = append(out, p.Operands[:]...)
	for j := range evidenceLen {
		out = append(out, p.Operands[j%numOperands])
	}
	out = append(out, work[:]...)
	out = append(out, tokThinkEnd, tokAnswer, work[numOperands-2], work[numOperands-1], tokAnswerEnd, tokEOS)
	return out
}

// Render turns response tokens into the text the verifiers score.
func Render(tokens []int) string {
	var sb strings.Builder
	for _, t := range tokens {
		switch {
		case t < numDigits:
			sb.WriteByte(byte('0' + t))
		case t < tokThink:
			fmt.Fprintf(&sb, "M%d ", t-tokMethod0)
		case t == tokThink:
			sb.WriteString("<think>")
		case t == tokThinkEnd:
			sb.WriteString("</think>")
		case t == tokAnswer:
			sb.WriteString("<answer>")
		case t == tokAnswerEnd:
			sb.WriteString("</answer>")
		}
	}
	return sb.String()
}

// Feature layout of the policy's input. The policy sees the position, the
// previous token, the skill (at the plan), a hint (at the plan, when one
// was given), the operand to echo (restatement and evidence), the chosen
// method with the previous accumulator and the current operand (work), and
// the work digit to copy (answer). Nothing shows a rule or a skill's method.
const (
	featPos     = 0
	featPrev    = featPos + maxLen
	featSkill   = featPrev + vocab + 1
	featHint    = featSkill + numSkills
	featEcho    = featHint + numMethods
	featWork    = featEcho + numDigits                              // method (or none) × acc (or none) × operand
	featCopy    = featWork + (numMethods+1)*(numDigits+1)*numDigits // answer digit × token copied
	numFeatures = featCopy + 2*(vocab+1)
)

// features writes the active features for the next token after prefix;
// hint is the method a hint names, or −1.
func features(dst []int, p Prompt, hint int, prefix []int) []int {
	t := len(prefix)
	prev := vocab
	if t > 0 {
		prev = prefix[t-1]
	}
	dst = append(dst[:0], featPos+t, featPrev+prev)
	switch {
	case t == posPlan:
		dst = append(dst, featSkill+p.Skill)
		if hint >= 0 {
			dst = append(dst, featHint+hint)
		}
	case t >= posRestate && t < posWork:
		dst = append(dst, featEcho+p.Operands[(t-posRestate)%numOperands])
	case t >= posWork && t < posThinkEnd:
		i := t - posWork
		m := numMethods
		if pl := prefix[posPlan]; pl >= tokMethod0 && pl < tokMethod0+numMethods {
			m = pl - tokMethod0
		}
		acc := 0
		if i > 0 {
			acc = numDigits
			if prev < numDigits {
				acc = prev
			}
		}
		dst = append(dst, featWork+(m*(numDigits+1)+acc)*numDigits+p.Operands[i])
	case t == posDigits || t == posDigits+1:
		k := t - posDigits
		src := prefix[posWork+numOperands-2+k]
		dst = append(dst, featCopy+k*(vocab+1)+src)
	}
	return dst
}
