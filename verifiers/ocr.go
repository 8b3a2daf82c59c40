package verifiers

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/rlpost/rlpost/tensor"
)

// EditDistance returns the Levenshtein distance between a and b counted in
// characters (runes; an invalid UTF-8 byte counts as one U+FFFD), with unit
// costs for insertion, deletion and substitution. It returns an error
// wrapping ErrTooLarge when the table it needs, the rune counts' product
// after the common prefix and suffix are removed, exceeds MaxEditCells.
func EditDistance(a, b string) (int, error) {
	ra, rb := []rune(a), []rune(b)
	return editDistance(ra, rb)
}

func editDistance(a, b []rune) (int, error) {
	// A shared prefix and suffix never change the distance.
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(b) == 0 {
		return len(a), nil
	}
	if int64(len(a))*int64(len(b)) > MaxEditCells {
		return 0, tensor.Errorf(ErrTooLarge, "edit distance", nil, "%d×%d characters, limit %d cells", len(a), len(b), MaxEditCells)
	}
	// One row of the table, over the shorter string.
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i, ca := range a {
		diag := row[0]
		row[0] = i + 1
		for j, cb := range b {
			cost := diag
			if ca != cb {
				cost = min(diag, row[j], row[j+1]) + 1
			}
			diag = row[j+1]
			row[j+1] = cost
		}
	}
	return row[len(b)], nil
}

// OCRSimilarity returns LLaVA-OneVision-1.5's OCR reward: the best over
// targets of 1 − EditDistance(target, pred)/max(len(target), len(pred)),
// lengths in characters, and 0 when that is below 0.5. Two empty strings
// are identical (1). The length difference alone bounds the distance from
// below, so a target whose length differs from pred's by more than half
// scores 0 without computing the table; otherwise the table must fit
// MaxEditCells.
func OCRSimilarity(pred string, targets []string) (float64, error) {
	if len(targets) == 0 {
		return 0, tensor.Errorf(tensor.ErrEmpty, "targets", nil, "no target text")
	}
	rp := []rune(pred)
	best := 0.0
	for k, t := range targets {
		rt := []rune(t)
		n := max(len(rt), len(rp))
		if n == 0 {
			return 1, nil
		}
		if 2*abs(len(rt)-len(rp)) > n {
			continue
		}
		d, err := editDistance(rt, rp)
		if err != nil {
			return 0, tensor.Errorf(ErrTooLarge, "targets", tensor.At(k), "%d and %d characters: table over %d cells", len(rt), len(rp), MaxEditCells)
		}
		best = max(best, 1-float64(d)/float64(n))
	}
	if best < 0.5 {
		return 0, nil
	}
	return best, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// ocrTargets reads ref as a JSON array of strings (several acceptable
// texts) when it is one, else as the single target text.
func ocrTargets(ref string) []string {
	t := strings.TrimSpace(ref)
	if strings.HasPrefix(t, "[") {
		var many []string
		if err := json.Unmarshal([]byte(t), &many); err == nil && len(many) > 0 {
			for i, s := range many {
				many[i] = strings.TrimSpace(s)
			}
			return many
		}
	}
	return []string{t}
}

// OCR scores recognised text (LLaVA-OneVision-1.5 ocr) with OCRSimilarity:
// the extracted answer against ref, which is one target text or a JSON
// array of acceptable texts; both sides are trimmed of surrounding space.
// Edit distance counts characters, not bytes: "café" and "cafe" differ by
// one. Correct means an exact match with some target (score 1).
//
// Parameters: "extract" (default "auto"); "ignore_case" (default false)
// compares after mapping every character to lower case.
func OCR(ctx context.Context, pred, ref string, p Params) (Result, error) {
	return ocrRule.verify(ctx, pred, ref, p)
}

var ocrRule = rule{name: "ocr", extract: ExtractAuto, params: []string{"ignore_case"}, score: scoreOCR}

func scoreOCR(_ context.Context, ans string, found bool, ref string, p Params) (Result, error) {
	fold, err := p.Bool("ignore_case", false)
	if err != nil || !found {
		return Result{}, err
	}
	targets := ocrTargets(ref)
	got := ans
	if fold {
		got = foldCase(got)
		for i, t := range targets {
			targets[i] = foldCase(t)
		}
	}
	score, err := OCRSimilarity(got, targets)
	if err != nil {
		return Result{}, err
	}
	return Result{Score: score, Correct: score == 1, Parsed: ans}, nil
}

// foldCase maps s to lower case rune by rune, so the rune count, and with
// it the scale of the edit distance, does not change (an invalid byte stays
// one U+FFFD).
func foldCase(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
