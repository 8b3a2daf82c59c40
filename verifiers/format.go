package verifiers

import (
	"context"
	"strings"

	"github.com/rlpost/rlpost/verifiers/internal/norm"
)

// The four tags of the reasoning format, V-Triune's s_1..s_4 (Eq. 2).
var formatTags = [4]string{"<think>", "</think>", "<answer>", "</answer>"}

// ThinkAnswer reports whether s follows AVATAR's reasoning format (Eq. 7),
// <think>…</think><answer>…</answer>: after trimming surrounding white
// space, s starts with <think> and ends with </answer>, each of the four
// tags occurs exactly once, and only white space lies between </think> and
// <answer>.
func ThinkAnswer(s string) bool {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "<think>") || !strings.HasSuffix(s, "</answer>") {
		return false
	}
	for _, t := range formatTags {
		if strings.Count(s, t) != 1 {
			return false
		}
	}
	end := strings.Index(s, "</think>")
	ans := strings.Index(s, "<answer>")
	return end < ans && strings.TrimSpace(s[end+len("</think>"):ans]) == ""
}

// FormatTags returns V-Triune's format reward (Eq. 2): 0.25 for each of
// <think>, </think>, <answer>, </answer> that occurs exactly once in s,
// wherever it is.
func FormatTags(s string) float64 {
	var r float64
	for _, t := range formatTags {
		if strings.Count(s, t) == 1 {
			r += 0.25
		}
	}
	return r
}

// Format is the "format" verifier: score 1 when pred follows AVATAR's
// format (ThinkAnswer), else 0. AVATAR's reward is ±1 (rewards.Format);
// verifier scores stay in [0, 1]. ref is ignored.
//
// AVATAR's rule (Eq. 7) asks for the tags only. rlpost is stricter by
// default: a section counts only if it holds visible content — invisible
// characters (package norm: format characters, zero-width characters,
// Hangul fillers, U+2800) and white space are not content — so
// "<think>\u200b</think><answer>\u3164</answer>" is not the format.
// Invisible characters inside a tag are removed before the tags are read.
//
// Parameters: "visible" (default true); false gives the paper's exact
// rule, ThinkAnswer on the response as written.
func Format(ctx context.Context, response, reference string, p Params) (Result, error) {
	return formatRule.verify(ctx, response, reference, p)
}

var formatRule = rule{name: "format", norm: normNone, params: []string{"visible"}, read: readVisible,
	score: func(_ context.Context, pred string, _ bool, _ string, c *config) (Result, error) {
		ok := ThinkAnswer(pred)
		if c.visible {
			pred = norm.Clean(pred)
			ok = ThinkAnswer(pred) && sectionVisible(pred, "think") && sectionVisible(pred, "answer")
		}
		if ok {
			return Result{Score: 1, Correct: true}, nil
		}
		return Result{}, nil
	}}

// readVisible reads the format verifiers' "visible" (default true).
func readVisible(p Params, c *config) (err error) {
	c.visible, err = p.Bool("visible", true)
	return err
}

// sectionVisible reports whether s holds <name>…</name>, the first opening
// tag before the first closing one, with visible content between them.
func sectionVisible(s, name string) bool {
	o := strings.Index(s, "<"+name+">")
	c := strings.Index(s, "</"+name+">")
	return o >= 0 && c > o && norm.Visible(s[o+len(name)+2:c])
}

// FormatTagsVerifier is the "format_tags" verifier: FormatTags(pred), with
// Correct when all four tags occur once. ref is ignored.
//
// V-Triune's rule (Eq. 2) counts each tag on its own. rlpost is stricter
// by default: a tag that occurs once counts only when the section it
// delimits holds visible content (invisible characters and white space
// are not content; they are removed before the tags are read). The
// section of a tag is the text between it and its partner when the
// partner follows (or precedes, for a closing tag); for a tag without its
// partner, the text up to the next of the four tags (or from the previous
// one), or to the end (from the start) of the response. So
// "<think></think><answer>42</answer>" scores 0.5 and "<think>a</think><answer>b"
// 0.75.
//
// Parameters: "visible" (default true); false gives the paper's exact
// rule, FormatTags on the response as written.
func FormatTagsVerifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return formatTagsRule.verify(ctx, response, reference, p)
}

var formatTagsRule = rule{name: "format_tags", norm: normNone, params: []string{"visible"}, read: readVisible,
	score: func(_ context.Context, pred string, _ bool, _ string, c *config) (Result, error) {
		s := FormatTags(pred)
		if c.visible {
			s = formatTagsVisible(norm.Clean(pred))
		}
		return Result{Score: s, Correct: s == 1}, nil
	}}

// Answer is the "answer" verifier: exact match of the extracted answer
// with ref (trimmed), score 1 or 0, both normalised (package norm:
// invisible characters removed, digits of any script, NFKC).
//
// The answer is read under the slot rule (docs/spec.md#answer-slot), as
// ocr reads it: the answer region, or the box, fence, answer phrase or
// bare final line in it; one pair of quotes around it removed when ref is
// not quoted; alternatives ("X or Y") or a retraction after it score 0.
//
// Parameters: "extract" (default "slot"; "auto" is the reading of earlier
// releases); "ignore_case" (default false)
// compares with Unicode case folding.
func Answer(ctx context.Context, response, reference string, p Params) (Result, error) {
	return answerRule.verify(ctx, response, reference, p)
}

var answerRule = rule{name: "answer", extract: ExtractSlot, region: true, shape: shapeText,
	params: []string{"ignore_case"}, read: readIgnoreCase, score: scoreAnswer}

func scoreAnswer(_ context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	if !found {
		return Result{}, nil
	}
	fold := c.ignoreCase
	gold := strings.TrimSpace(ref)
	ans, ok := oneText(ans, c, gold)
	if !ok {
		return Result{Reason: reasonSeveral}, nil
	}
	res := Result{Parsed: ans}
	if ans == gold || fold && strings.EqualFold(ans, gold) {
		res.Score, res.Correct = 1, true
	}
	return res, nil
}

// formatTagsVisible is FormatTags counting a tag only when its section
// holds visible content (see FormatTagsVerifier).
func formatTagsVisible(s string) float64 {
	var pos [4]int
	for k, t := range formatTags {
		pos[k] = -1
		if strings.Count(s, t) == 1 {
			pos[k] = strings.Index(s, t)
		}
	}
	// next and prev find the neighbouring tag of any kind.
	next := func(i int) int {
		e := len(s)
		for _, t := range formatTags {
			if j := strings.Index(s[i:], t); j >= 0 && i+j < e {
				e = i + j
			}
		}
		return e
	}
	prev := func(i int) int {
		b := 0
		for _, t := range formatTags {
			if j := strings.LastIndex(s[:i], t); j >= 0 && j+len(t) > b {
				b = j + len(t)
			}
		}
		return b
	}
	var r float64
	for k, t := range formatTags {
		p := pos[k]
		if p < 0 {
			continue
		}
		var content string
		if k%2 == 0 { // an opening tag: to its closing partner, else the next tag
			from := p + len(t)
			if q := pos[k+1]; q >= from {
				content = s[from:q]
			} else {
				content = s[from:next(from)]
			}
		} else { // a closing tag: from its opening partner, else the previous tag
			if q := pos[k-1]; q >= 0 && q+len(formatTags[k-1]) <= p {
				content = s[q+len(formatTags[k-1]) : p]
			} else {
				content = s[prev(p):p]
			}
		}
		if norm.Visible(content) {
			r += 0.25
		}
	}
	return r
}
