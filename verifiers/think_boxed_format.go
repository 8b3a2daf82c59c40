package verifiers

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rlpost/rlpost/verifiers/internal/norm"
)

// ThinkBoxed is the cross-cutting format rule of LLaVA-OneVision-1.5's RL
// write-up on AReaL ("Format Reward (cross-cutting): requires exactly one
// <think> block, at least one \boxed{}, and boxed content ≤ 20% of total
// length"): s holds exactly one <think> and one </think>, the first before
// the second; at least one \boxed{…} with balanced braces; and the boxed
// contents, summed over the outermost \boxed{} (the braces' insides),
// are at most maxRatio of the whole response, both counted in runes.
// LLaVA-OneVision-1.5 uses maxRatio = 0.2. A \boxed{} may sit inside or
// outside the <think> block; the write-up does not restrict where. It
// reports the boxed share it measured (0 when there is none).
func ThinkBoxed(s string, maxRatio float64) (ok bool, share float64) {
	if strings.Count(s, "<think>") != 1 || strings.Count(s, "</think>") != 1 ||
		strings.Index(s, "<think>") > strings.Index(s, "</think>") {
		return false, 0
	}
	boxed, n := boxedRunes(s)
	if n == 0 {
		return false, 0
	}
	total := utf8.RuneCountInString(s)
	share = float64(boxed) / float64(total)
	return share <= maxRatio, share
}

// boxedRunes returns the runes inside the outermost balanced \boxed{…} of
// s and how many there are. A \boxed{ whose braces never close ends the
// scan: everything after it lies inside it. Escaped braces \{ and \} do
// not nest. It runs in linear time.
func boxedRunes(s string) (runes, n int) {
	const open = `\boxed{`
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], open)
		if j < 0 {
			break
		}
		start := i + j + len(open)
		k, ok := boxEnd(s, start)
		if !ok {
			break // unbalanced: nothing after it closes either
		}
		runes += utf8.RuneCountInString(s[start : k-1])
		n++
		i = k
	}
	return runes, n
}

// boxEnd returns the index just past the '}' that closes a box whose
// content starts at start (escaped bytes skipped), or false when nothing
// closes it.
func boxEnd(s string, start int) (int, bool) {
	depth, k := 1, start
	for k < len(s) && depth > 0 {
		switch s[k] {
		case '\\':
			k++ // skip the escaped byte
		case '{':
			depth++
		case '}':
			depth--
		}
		k++
	}
	return k, depth == 0 && k <= len(s)
}

// ThinkBoxedFormat is the "think_boxed_format" verifier: score 1 when pred
// follows LLaVA-OneVision-1.5's format rule (ThinkBoxed), else 0; Parsed
// is the boxed share of the response. ref is ignored.
//
// The write-up's rule asks for the blocks only. rlpost is stricter by
// default: the <think> block and at least one \boxed{} must hold visible
// content (invisible characters — package norm — and white space are not
// content; they are removed before the rule runs), so an empty or
// zero-width block or box does not count.
//
// Parameters: "max_ratio" (default 0.2, the write-up's 20 %), the largest
// boxed share allowed, in (0, 1]; "visible" (default true): false gives
// the write-up's exact rule, ThinkBoxed on the response as written.
func ThinkBoxedFormat(ctx context.Context, response, reference string, p Params) (Result, error) {
	return thinkBoxedRule.verify(ctx, response, reference, p)
}

var thinkBoxedRule = rule{norm: normNone,
	name: "think_boxed_format", params: []string{"max_ratio", "visible"},
	read: func(p Params, c *config) (err error) {
		if c.maxRatio, err = floatIn(p, "max_ratio", 0.2, 0, 1, true); err != nil {
			return err
		}
		return readVisible(p, c)
	},
	score: scoreThinkBoxed,
}

func scoreThinkBoxed(_ context.Context, pred string, _ bool, _ string, c *config) (Result, error) {
	maxRatio := c.maxRatio
	if c.visible {
		pred = norm.Clean(pred)
	}
	ok, share := ThinkBoxed(pred, maxRatio)
	if ok && c.visible && !(sectionVisible(pred, "think") && visibleBox(pred)) {
		ok = false
	}
	res := Result{Parsed: fmt.Sprintf("boxed share %.4g", share)}
	if ok {
		res.Score, res.Correct = 1, true
	}
	return res, nil
}

// visibleBox reports whether some outermost balanced \boxed{…} of s holds
// visible content.
func visibleBox(s string) bool {
	const open = `\boxed{`
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], open)
		if j < 0 {
			return false
		}
		start := i + j + len(open)
		k, ok := boxEnd(s, start)
		if !ok {
			return false
		}
		if norm.Visible(s[start : k-1]) {
			return true
		}
		i = k
	}
	return false
}
