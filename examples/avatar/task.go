package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The task: a prompt shows four digits and asks for some of them, in a
// given order; the answer is those digits written as one number. A query
// for one digit is easy for a policy that answers at random (one chance in
// ten), a query for two is hard (one in a hundred) and for three harder
// still: groups of eight responses to the hard queries are often all wrong,
// the vanishing-advantage case. Copying generalises (the policy sees each
// (position, digit) pair as a feature), so accuracy on held-out prompts
// measures what was learnt, not what was memorised.

// Tokens of the vocabulary.
const (
	tokThink = 10 + iota // <think>
	tokThinkEnd
	tokAnswer
	tokAnswerEnd
	tokFillA // three "thinking" tokens the policy may use freely
	tokFillB
	tokFillC
	tokEOS
	vocab
)

var tokenText = [vocab]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
	"<think>", "</think>", "<answer>", "</answer>", "a", "b", "c", ""}

// maxLen bounds a response; a response that reaches it without an end is
// truncated (and so badly formatted).
const maxLen = 14

// queries lists the positions each query asks for, in answer order.
var queries = [][]int{
	{0}, {1}, {2}, {3},
	{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}, {3, 1},
	{0, 1, 2}, {3, 2, 1},
}

// Prompt is one task instance.
type Prompt struct {
	Digits [4]int
	Query  int
}

// ID identifies a prompt across the run (the key of its VCRS score).
func (p Prompt) ID() uint64 {
	id := uint64(p.Query)
	for _, d := range p.Digits {
		id = id*10 + uint64(d)
	}
	return id
}

// Hard reports whether the query asks for more than one digit.
func (p Prompt) Hard() bool { return len(queries[p.Query]) > 1 }

// Answer is the number the prompt asks for.
func (p Prompt) Answer() string {
	var sb strings.Builder
	for _, i := range queries[p.Query] {
		sb.WriteByte(byte('0' + p.Digits[i]))
	}
	return sb.String()
}

// String renders the prompt as a user would write it.
func (p Prompt) String() string {
	pos := make([]string, len(queries[p.Query]))
	for k, i := range queries[p.Query] {
		pos[k] = fmt.Sprint(i + 1)
	}
	return fmt.Sprintf("digits %d %d %d %d: write positions %s as one number", p.Digits[0], p.Digits[1], p.Digits[2], p.Digits[3], strings.Join(pos, ", "))
}

func randomPrompt(rng *rand.Rand) Prompt {
	var p Prompt
	for i := range p.Digits {
		p.Digits[i] = rng.IntN(10)
	}
	p.Query = rng.IntN(len(queries))
	return p
}

// Render turns response tokens into the text the verifiers score.
func Render(tokens []int) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteString(tokenText[t])
	}
	return sb.String()
}

// Feature layout of the policy's input: which digit sits at each of the
// four positions, the query, the previous token, the step, and how many
// answer digits were written so far.
const (
	featDigit    = 0                    // 40: position·10 + digit
	featQuery    = featDigit + 40       // one per query
	featPrev     = featQuery + 12       // previous token, or vocab for the start
	featStep     = featPrev + vocab + 1 // 0..maxLen−1
	featAnswered = featStep + maxLen    // answer digits written: 0..4+
	featPointer  = featAnswered + 5     // the digit the next answer digit should copy, if any
	numFeatures  = featPointer + 10
)

// features writes the active features for the next token after prefix.
func features(dst []int, p Prompt, prefix []int) []int {
	dst = dst[:0]
	for i, d := range p.Digits {
		dst = append(dst, featDigit+10*i+d)
	}
	dst = append(dst, featQuery+p.Query)
	prev := vocab
	if n := len(prefix); n > 0 {
		prev = prefix[n-1]
	}
	dst = append(dst, featPrev+prev, featStep+len(prefix))
	answered, inAnswer := 0, false
	for _, t := range prefix {
		switch {
		case t == tokAnswer:
			inAnswer = true
		case t == tokAnswerEnd:
			inAnswer = false
		case inAnswer && t < 10:
			answered++
		}
	}
	dst = append(dst, featAnswered+min(answered, 4))
	// The digit at the position the next answer digit copies: what
	// attention would retrieve in a transformer, handed to this small
	// network as a feature. The policy still has to learn to use it.
	if q := queries[p.Query]; inAnswer && answered < len(q) {
		dst = append(dst, featPointer+p.Digits[q[answered]])
	}
	return dst
}
