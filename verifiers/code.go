package verifiers

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens returns the set of tokens of s: maximal runs of letters, digits
// and underscores (any script). "<div class='a-b'>" has div, class, a, b.
func Tokens(s string) map[string]struct{} {
	set := make(map[string]struct{})
	start := -1
	for i, r := range s {
		word := r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && start < 0 {
			start = i
		} else if !word && start >= 0 {
			set[s[start:i]] = struct{}{}
			start = -1
		}
	}
	if start >= 0 {
		set[s[start:]] = struct{}{}
	}
	return set
}

// Tags returns the set of markup tag names of s, lower-cased: the name
// after each "<" or "</" that starts with an ASCII letter and goes on with
// letters, digits, '-', ':' or '_' ("<svg:rect", "</my-widget").
func Tags(s string) map[string]struct{} {
	set := make(map[string]struct{})
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		j := i + 1
		if j < len(s) && s[j] == '/' {
			j++
		}
		if j >= len(s) || !('a' <= s[j]|0x20 && s[j]|0x20 <= 'z') {
			continue
		}
		k := j
		for k < len(s) && (isWordByte(s[k]) && s[k] < utf8.RuneSelf || s[k] == '-' || s[k] == ':') {
			k++
		}
		set[strings.ToLower(s[j:k])] = struct{}{}
		i = k - 1
	}
	return set
}

// Jaccard returns |a ∩ b| / |a ∪ b|, and 1 for two empty sets.
func Jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// CodeOverlap returns the token Jaccard and the tag-set Jaccard of pred
// and ref.
func CodeOverlap(pred, ref string) (token, tag float64) {
	return Jaccard(Tokens(pred), Tokens(ref)), Jaccard(Tags(pred), Tags(ref))
}

// passParam reads the "pass" parameter, the score a prediction needs to
// count as correct.
func passParam(p Params) (float64, error) {
	pass, err := p.Float("pass", 1)
	if err != nil {
		return 0, err
	}
	if pass < 0 || pass > 1 {
		return 0, paramErr("pass", "%v, want in [0, 1]", pass)
	}
	return pass, nil
}

// HTML scores generated markup or code by structure (LLaVA-OneVision-1.5
// htmlcode): 0.6·token Jaccard + 0.4·tag-set Jaccard of the extracted
// answer and ref (see Tokens and Tags). Correct means score ≥ "pass".
//
// The answer is read under the slot rule (docs/spec.md#answer-slot): the
// answer region (never the reasoning), then the last ``` fence in it;
// a retraction after the fence scores 0. Invisible characters are removed
// from both sides first.
//
// Parameters: "extract" (default "slot"; "code" is the reading of earlier
// releases: the last <answer>, else the whole text, then the last ```
// fence in it); "pass" (default 1).
func HTML(ctx context.Context, response, reference string, p Params) (Result, error) {
	return htmlRule.verify(ctx, response, reference, p)
}

var htmlRule = rule{name: "html", extract: ExtractSlot, region: true, shape: shapeCode, norm: normClean,
	params: []string{"pass"}, read: readPass, score: scoreHTML}

func readPass(p Params, c *config) (err error) {
	c.pass, err = passParam(p)
	return err
}

func scoreHTML(ctx context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	if !found {
		return Result{}, nil
	}
	pass := c.pass
	tok, tag := CodeOverlap(ans, ref)
	if err := ctx.Err(); err != nil {
		return Result{}, err // the deadline, checked after the linear work
	}
	score := clamp01(0.6*tok + 0.4*tag)
	return Result{Score: score, Correct: score >= pass, Parsed: ans}, nil
}
