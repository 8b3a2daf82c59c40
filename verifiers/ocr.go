package verifiers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
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
	d, err := editDistance([]rune(a), []rune(b))
	if err != nil {
		return 0, fmt.Errorf("verifiers: %w", err)
	}
	return d, nil
}

// trimCommon drops the prefix and suffix a and b share, which never change
// their edit distance, and returns the longer remainder first.
func trimCommon(a, b []rune) ([]rune, []rune) {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	return a, b
}

func editDistance(a, b []rune) (int, error) {
	a, b = trimCommon(a, b)
	if len(b) == 0 {
		return len(a), nil
	}
	if int64(len(a))*int64(len(b)) > MaxEditCells {
		return 0, tensor.Errorf(ErrTooLarge, "a, b", nil, "%d×%d characters, limit %d cells", len(a), len(b), MaxEditCells)
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
// are identical (1). It is OCRSimilarityContext without a deadline; a call
// over its work limit is an error wrapping ErrTooLarge.
func OCRSimilarity(pred string, targets []string) (float64, error) {
	r0, err := ocrSimilarity(pred, targets)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func ocrSimilarity(pred string, targets []string) (float64, error) {
	score, limited, err := ocrSimilarityContext(context.Background(), pred, targets)
	if err == nil && limited && score == 0 {
		return 0, tensor.Errorf(ErrTooLarge, "targets", nil, "edit distances over %d cells", MaxEditCells)
	}
	return score, err
}

// OCRSimilarityContext computes OCRSimilarity within a fixed amount of
// work per call, whatever the number and length of the targets: at most
// MaxEditCells cells of edit-distance table in all. Only distances that
// can still raise the score matter (at most (1 − best)·n, and never more
// than n/2), so each target is compared with a banded table whose band
// doubles from 8 until the distance is found or cannot matter (Ukkonen's
// cut-off). Targets are tried in order of their lower bound (the length
// difference), exact matches first. limited reports targets left
// uncompared because the cell budget ran out; the score is then the best
// of those compared. ctx is checked while the tables are filled.
func OCRSimilarityContext(ctx context.Context, pred string, targets []string) (score float64, limited bool, err error) {
	r0, r1, err := ocrSimilarityContext(ctx, pred, targets)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, r1, err
}

func ocrSimilarityContext(ctx context.Context, pred string, targets []string) (score float64, limited bool, err error) {
	if len(targets) == 0 {
		return 0, false, tensor.Errorf(tensor.ErrEmpty, "targets", nil, "no target text")
	}
	for _, t := range targets {
		if t == pred {
			return 1, false, nil
		}
	}
	rp := []rune(pred)
	type cand struct {
		r     []rune
		lower int
	}
	cands := make([]cand, 0, len(targets))
	for _, t := range targets {
		rt := []rune(t)
		cands = append(cands, cand{rt, abs(len(rt) - len(rp))})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].lower < cands[j].lower })
	cells := MaxEditCells
	best := 0.0
	for _, c := range cands {
		n := max(len(c.r), len(rp))
		if n == 0 {
			return 1, false, nil
		}
		// Distances above kmax cannot beat max(best, 0.5).
		kmax := int((1 - max(best, 0.5)) * float64(n))
		if c.lower > kmax {
			continue
		}
		d, ok, lim, err := boundedDistance(ctx, c.r, rp, kmax, &cells)
		if err != nil {
			return 0, false, err
		}
		if lim {
			limited = true
			continue
		}
		if ok {
			best = max(best, 1-float64(d)/float64(n))
		}
	}
	if best < 0.5 {
		return 0, limited, nil
	}
	return best, limited, nil
}

// boundedDistance returns the edit distance of a and b when it is at most
// kmax (ok), computing banded tables of widening band and charging their
// cells to *cells; lim reports that the next table would overdraw it.
func boundedDistance(ctx context.Context, a, b []rune, kmax int, cells *int) (d int, ok, lim bool, err error) {
	a, b = trimCommon(a, b)
	if len(b) == 0 {
		return len(a), len(a) <= kmax, false, nil
	}
	var prev, cur []int
	for k := min(8, kmax); ; k = min(2*k, kmax) {
		cost := len(a) * (2*k + 1)
		if cost > *cells {
			return 0, false, true, nil
		}
		*cells -= cost
		if cap(prev) < len(b)+1 {
			prev, cur = make([]int, len(b)+1), make([]int, len(b)+1)
		}
		d, err := banded(ctx, a, b, k, prev[:len(b)+1], cur[:len(b)+1])
		if err != nil {
			return 0, false, false, err
		}
		if d <= k {
			return d, true, false, nil
		}
		if k >= kmax {
			return 0, false, false, nil
		}
	}
}

// banded returns the Levenshtein distance of a and b if it is at most k,
// else k+1, filling only the cells within k of the diagonal.
func banded(ctx context.Context, a, b []rune, k int, prev, cur []int) (int, error) {
	m, n := len(a), len(b)
	if abs(m-n) > k {
		return k + 1, nil
	}
	inf := k + 1
	for j := range prev {
		prev[j] = min(j, inf)
	}
	for i := 1; i <= m; i++ {
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		lo, hi := max(1, i-k), min(n, i+k)
		if lo == 1 {
			cur[0] = min(i, inf)
		} else {
			cur[lo-1] = inf
		}
		rowMin := cur[lo-1]
		ca := a[i-1]
		for j := lo; j <= hi; j++ {
			c := prev[j-1]
			if ca != b[j-1] {
				c = min(c, prev[j], cur[j-1]) + 1
			}
			c = min(c, inf)
			cur[j] = c
			rowMin = min(rowMin, c)
		}
		if hi < n {
			cur[hi+1] = inf
		}
		if rowMin >= inf {
			return inf, nil
		}
		prev, cur = cur, prev
	}
	return min(prev[n], inf), nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// ocrTargets reads ref as a JSON array of strings (several acceptable
// texts) when it is one, else as the single target text. A ref that opens
// like an array of strings (`["`) but is not one is an error wrapping
// ErrSyntax, and so is an empty array. An empty ref is the target of an
// image without text.
func ocrTargets(ref string) ([]string, error) {
	t := strings.TrimSpace(ref)
	if strings.HasPrefix(t, "[") {
		var many []string
		err := json.Unmarshal([]byte(t), &many)
		if err == nil && len(many) > 0 {
			for i, s := range many {
				many[i] = strings.TrimSpace(s)
			}
			return many, nil
		}
		if err == nil || strings.HasPrefix(strings.TrimSpace(t[1:]), `"`) {
			return nil, tensor.Errorf(ErrSyntax, "ref", nil, "%q, want a JSON array of one or more strings, or a plain text", clip(t))
		}
	}
	return []string{t}, nil
}

// OCR scores recognised text (LLaVA-OneVision-1.5 ocr) with OCRSimilarity:
// the extracted answer against ref, which is one target text or a JSON
// array of acceptable texts; both sides are trimmed of surrounding space.
// Edit distance counts characters, not bytes: "café" and "cafe" differ by
// one. Both sides are normalised first (docs/spec.md#text-normalisation:
// invisible characters removed, digits of any script, NFKC), so a
// decomposed accent equals the composed one and fullwidth text the ASCII.
//
// The answer is read under the slot rule (docs/spec.md#answer-slot): the
// answer region, or the box, fence, answer phrase or bare final line in
// it; one pair of quotes around the whole answer is removed when no target
// is quoted; an answer offering alternatives ("X or Y", "X / Y", "either",
// "maybe") that no target contains, or a retraction after it, scores 0.
// Correct means an exact match with some target (score 1).
//
// Parameters: "extract" (default "slot"; "auto" is the reading of earlier
// releases: the last <answer>, else the whole text, then its last box); "ignore_case" (default false)
// compares after mapping every character to lower case.
func OCR(ctx context.Context, response, reference string, p Params) (Result, error) {
	return ocrRule.verify(ctx, response, reference, p)
}

var ocrRule = rule{name: "ocr", extract: ExtractSlot, region: true, shape: shapeText,
	params: []string{"ignore_case"}, read: readIgnoreCase, score: scoreOCR}

func readIgnoreCase(p Params, c *config) (err error) {
	c.ignoreCase, err = p.Bool("ignore_case", false)
	return err
}

func scoreOCR(ctx context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	targets, err := ocrTargets(ref)
	if err != nil || !found {
		return Result{}, err
	}
	ans, ok := oneText(ans, c, targets...)
	if !ok {
		return Result{Reason: reasonSeveral}, nil
	}
	fold := c.ignoreCase
	got := ans
	if fold {
		got = foldCase(got)
		for i, t := range targets {
			targets[i] = foldCase(t)
		}
	}
	score, limited, err := ocrSimilarityContext(ctx, got, targets)
	if err != nil {
		return deadlineResult(err)
	}
	res := Result{Score: score, Correct: score == 1, Parsed: ans}
	if limited {
		res.Reason = fmt.Sprintf("limit: edit distance work over %d cells; some targets not compared", MaxEditCells)
	}
	return res, nil
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
