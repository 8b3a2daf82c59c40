package verifiers_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ifevalCase is one instruction with a response that follows it and one
// that does not.
type ifevalCase struct {
	params     verifiers.Params
	pass, fail string
}

var ifevalCases = []ifevalCase{
	{verifiers.Params{"min_words": 5.0}, "one two three four five", "one two three"},
	{verifiers.Params{"max_words": 3.0}, "one two three", "one two three four"},
	{verifiers.Params{"min_sentences": 2.0}, "It rains. It pours!", "It rains and pours"},
	{verifiers.Params{"max_sentences": 1.0}, "It rains.", "It rains. It pours."},
	{verifiers.Params{"min_paragraphs": 2.0}, "First part.\n\nSecond part.", "First part. Second part."},
	{verifiers.Params{"max_paragraphs": 1.0}, "Only one.", "One.\n***\nTwo."},
	{verifiers.Params{"keywords": []any{"cat", "blue sky"}}, "The cat saw a blue sky.", "The concatenation saw a grey sky."},
	{verifiers.Params{"forbidden_words": []any{"bad"}}, "A good badge.", "That is bad."},
	{verifiers.Params{"case": "lower"}, "all lower, 42.", "Not lower."},
	{verifiers.Params{"case": "upper"}, "ALL UPPER, 42.", "NOT uPPER."},
	{verifiers.Params{"json": true}, "```json\n{\"a\": [1, 2]}\n```", "{\"a\": [1, 2]"},
	{verifiers.Params{"min_placeholders": 2.0}, "Send it to [name] at [address].", "Send it to [name]."},
	{verifiers.Params{"min_sections": 2.0}, "Section 1\nIntro.\nSECTION 2\nBody.", "Section 1\nIntro. Subsection 2."},
	{verifiers.Params{"start_with": "Dear"}, "dear reader, hello.", "Hello, dear reader."},
	{verifiers.Params{"end_with": "Is there anything else I can help with?"}, "Done. Is there anything else I can help with?", "Is there anything else I can help with? Done."},
}

// TestIFEvalInstructions: each instruction passes its following response
// and fails the other, in every wrapper that puts the text after the
// reasoning; the reasoning never counts.
func TestIFEvalInstructions(t *testing.T) {
	for _, c := range ifevalCases {
		for _, wrap := range []func(string) string{
			func(s string) string { return s },
			func(s string) string { return "<think>thinking about it</think>" + s },
			func(s string) string { return "<think>x</think><answer>" + s + "</answer>" },
		} {
			r := verify(t, "ifeval", wrap(c.pass), "", c.params)
			assert.Equal(t, 1.0, r.Score, "%v on %q: %+v", c.params, wrap(c.pass), r)
			r = verify(t, "ifeval", wrap(c.fail), "", c.params)
			assert.Zero(t, r.Score, "%v on %q: %+v", c.params, wrap(c.fail), r)
		}
		// The following text only inside the reasoning: the text after it
		// (the failing one) is what counts.
		r := verify(t, "ifeval", "<think>"+c.pass+"</think>"+c.fail, "", c.params)
		assert.Zero(t, r.Score, "%v: following text only in the reasoning: %+v", c.params, r)
	}
}

// TestIFEvalInvisibleCharacters: inserting invisible characters anywhere
// changes no verdict — they neither pad a count nor hide a word.
func TestIFEvalInvisibleCharacters(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 4))
	for _, c := range ifevalCases {
		for _, text := range []string{c.pass, c.fail} {
			want := verify(t, "ifeval", text, "", c.params).Score
			for _, in := range insertions(text, 16, rng) {
				assert.Equal(t, want, verify(t, "ifeval", in, "", c.params).Score, "%v on %q", c.params, in)
			}
		}
	}
	// Words made of invisible characters alone are not words.
	pad := "one two" + strings.Repeat(" \u200b \u3164", 10)
	assert.Zero(t, verify(t, "ifeval", pad, "", verifiers.Params{"min_words": 5.0}).Score)
}

func TestIFEvalScoreIsShareFollowed(t *testing.T) {
	p := verifiers.Params{"min_words": 2.0, "keywords": []any{"cat", "dog"}, "case": "lower"}
	r := verify(t, "ifeval", "a cat sat", "", p)
	require.False(t, r.Correct)
	assert.InDelta(t, 0.75, r.Score, 1e-12, "%+v", r) // 3 of 4 instructions
	assert.Contains(t, r.Reason, "keyword dog")
}

// FuzzIFEval checks every instruction on any response: a score in
// [0, 1] without an error, the same score after a zero-width character is
// inserted anywhere, and the score of the text after the reasoning
// whatever the reasoning holds.
func FuzzIFEval(f *testing.F) {
	for _, c := range ifevalCases {
		f.Add(c.pass, uint16(3))
		f.Add(c.fail, uint16(9))
	}
	f.Fuzz(func(t *testing.T, pred string, at uint16) {
		i := int(at) % (len(pred) + 1)
		for i > 0 && i < len(pred) && pred[i]&0xC0 == 0x80 {
			i--
		}
		inserted := pred[:i] + "\u200b" + pred[i:]
		for _, c := range ifevalCases {
			r, err := verifiers.Default.Verify(context.Background(), "ifeval", pred, "", c.params)
			if err != nil || !(r.Score >= 0 && r.Score <= 1) {
				t.Fatalf("ifeval %v on %q = %+v, %v", c.params, pred, r, err)
			}
			r2, err := verifiers.Default.Verify(context.Background(), "ifeval", inserted, "", c.params)
			if err != nil || r2.Score != r.Score {
				t.Fatalf("ifeval %v: %q scores %v, %q scores %v (%v)", c.params, pred, r.Score, inserted, r2.Score, err)
			}
			if strings.Contains(pred, "think") || strings.Contains(pred, "answer>") || strings.Contains(pred, "reasoning>") || strings.Contains(pred, "<|") {
				continue
			}
			r3, err := verifiers.Default.Verify(context.Background(), "ifeval", "<think>"+c.pass+"</think>"+pred, "", c.params)
			if err != nil || r3.Score != r.Score {
				t.Fatalf("ifeval %v: the reasoning changed the score of %q: %v then %v (%v)", c.params, pred, r.Score, r3.Score, err)
			}
		}
	})
}
