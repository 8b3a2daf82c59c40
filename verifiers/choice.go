package verifiers

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rlpost/rlpost/tensor"
)

// FirstLetter returns the first letter of s (any script), or false when s
// holds none. "(b) a cat" gives 'b'.
func FirstLetter(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return r, true
		}
	}
	return 0, false
}

// Choice scores a multiple-choice answer (LLaVA-OneVision-1.5
// multiple_choice): the first letter of the extracted answer against the
// first letter of ref, case-insensitively. Score 1 or 0.
//
// Parameters: "extract" (default "auto").
func Choice(ctx context.Context, pred, ref string, p Params) (Result, error) {
	return choiceRule.verify(ctx, pred, ref, p)
}

var choiceRule = rule{name: "choice", extract: ExtractAuto, score: scoreChoice}

func scoreChoice(_ context.Context, ans string, found bool, ref string, _ Params) (Result, error) {
	gold, ok := FirstLetter(ref)
	if !ok {
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "no letter in %q", clip(ref))
	}
	got, ok := FirstLetter(ans)
	if !found || !ok {
		return Result{}, nil
	}
	res := Result{Parsed: string(unicode.ToUpper(got))}
	if strings.EqualFold(string(got), string(gold)) {
		res.Score, res.Correct = 1, true
	}
	return res, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
