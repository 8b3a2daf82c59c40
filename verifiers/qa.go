package verifiers

import (
	"context"
	"strings"
	"unicode"
)

// NormalizeQA is SQuAD's answer normalisation ("SQuAD", arXiv 1606.05250,
// the official evaluation script), as Search-R1 ("Search-R1", arXiv
// 2503.09516, §3.3: exact match as the outcome reward) uses it: lower
// case, punctuation removed, the articles "a", "an", "the" removed, white
// space collapsed. Punctuation is every Unicode punctuation character.
func NormalizeQA(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
	var b strings.Builder
	for _, w := range strings.Fields(s) {
		if w == "a" || w == "an" || w == "the" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// QAF1 returns SQuAD's token F1 of pred against gold, both normalised by
// NormalizeQA and split on white space: 2·P·R/(P + R) with P and R the
// shares of common tokens (counted with multiplicity) in pred and gold;
// 1 when both are empty, 0 when one is.
func QAF1(pred, gold string) float64 {
	p, g := strings.Fields(NormalizeQA(pred)), strings.Fields(NormalizeQA(gold))
	if len(p) == 0 || len(g) == 0 {
		if len(p) == len(g) {
			return 1
		}
		return 0
	}
	count := make(map[string]int, len(g))
	for _, w := range g {
		count[w]++
	}
	common := 0
	for _, w := range p {
		if count[w] > 0 {
			count[w]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	prec, rec := float64(common)/float64(len(p)), float64(common)/float64(len(g))
	return 2 * prec * rec / (prec + rec)
}

// QA is the "qa" verifier for open-domain question answering (Search-R1,
// SQuAD): the answer, read under the slot rule (docs/spec.md#answer-slot,
// as ocr reads it: the answer region, or its box, fence, answer phrase or
// bare final line; one pair of quotes removed; alternatives such as "X or
// Y" that no gold contains, or a retraction after it, score 0), against
// ref, one gold answer or a JSON array of several. With "metric" "em"
// (default, Search-R1's reward) the score is 1 when the normalised answer
// (NormalizeQA) equals some normalised gold, else 0; with "f1" it is the
// best token F1 (QAF1) over the golds. Correct means an exact match.
// Response and reference are normalised first
// (docs/spec.md#text-normalisation).
//
// Parameters: "extract" (default "slot"), "metric" ("em" or "f1").
func QA(ctx context.Context, response, reference string, p Params) (Result, error) {
	return qaRule.verify(ctx, response, reference, p)
}

var qaRule = rule{
	name: "qa", extract: ExtractSlot, region: true, shape: shapeText, params: []string{"metric"},
	read: func(p Params, c *config) (err error) {
		c.style, err = p.Enum("metric", "em", "em", "f1")
		return err
	},
	score: scoreQA,
}

func scoreQA(_ context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	golds, err := ocrTargets(ref)
	if err != nil || !found {
		return Result{}, err
	}
	ans, ok := oneText(ans, c, golds...)
	if !ok {
		return Result{Reason: reasonSeveral}, nil
	}
	got := NormalizeQA(ans)
	res := Result{Parsed: got}
	for _, g := range golds {
		if got == NormalizeQA(g) {
			res.Score, res.Correct = 1, true
			return res, nil
		}
		if c.style == "f1" {
			res.Score = max(res.Score, QAF1(ans, g))
		}
	}
	res.Score = clamp01(res.Score)
	return res, nil
}
