package verifiers

import (
	"strings"

	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// AnswerTag returns the content of the last closed <answer>…</answer> pair
// of s: the last "</answer>" and the last "<answer>" before it. An
// "<answer>" left open at the end (a truncated response) is not an answer.
func AnswerTag(s string) (string, bool) { return LastTag(s, "answer") }

// LastTag returns the content of the last closed <name>…</name> pair of s,
// found as AnswerTag finds <answer>: the last closing tag and the last
// opening tag before it. The content is not trimmed.
func LastTag(s, name string) (string, bool) {
	end := strings.LastIndex(s, "</"+name+">")
	if end < 0 {
		return "", false
	}
	open := "<" + name + ">"
	start := strings.LastIndex(s[:end], open)
	if start < 0 {
		return "", false
	}
	return s[start+len(open) : end], true
}

// LastBoxed returns the content of the last \boxed{…} of s whose braces
// balance, "last" by where it opens, so \boxed{\boxed{1}} gives "1". The
// escapes \{, \} and \\ are literal characters, not braces. It runs in one
// pass and never recurses, whatever the nesting.
func LastBoxed(s string) (string, bool) {
	const open = `\boxed{`
	type frame struct{ depth, start int }
	var (
		stack     []frame // open \boxed{, innermost last
		depth     int     // of all unescaped braces
		bestStart = -1
		bestEnd   int
	)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if strings.HasPrefix(s[i:], open) {
				depth++
				stack = append(stack, frame{depth, i + len(open)})
				i += len(open) - 1
				continue
			}
			i++ // skip the escaped character: \{, \}, \\
		case '{':
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			if n := len(stack); n > 0 && stack[n-1].depth == depth {
				f := stack[n-1]
				stack = stack[:n-1]
				if f.start > bestStart {
					bestStart, bestEnd = f.start, i
				}
			}
			depth--
		}
	}
	if bestStart < 0 {
		return "", false
	}
	return s[bestStart:bestEnd], true
}

// LastFence returns the content of the last closed ``` fenced block of s,
// without the info string (```html) on the opening line.
func LastFence(s string) (string, bool) {
	end := strings.LastIndex(s, "```")
	if end < 0 {
		return "", false
	}
	start := strings.LastIndex(s[:end], "```")
	if start < 0 {
		return "", false
	}
	body := s[start+3 : end]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], " \t<>{}[]") {
		body = body[nl+1:]
	}
	return body, true
}

// Extraction modes, the "extract" parameter of the verifiers that score an
// answer.
const (
	// ExtractAuto: the last <answer> pair (else the whole text), then the
	// last \boxed{} inside it if there is one.
	ExtractAuto = "auto"
	// ExtractAnswer: the last <answer> pair; none means no answer.
	ExtractAnswer = "answer"
	// ExtractBoxed: the last \boxed{}; none means no answer.
	ExtractBoxed = "boxed"
	// ExtractCode: the last <answer> pair (else the whole text), then the
	// last ``` fenced block inside it if there is one.
	ExtractCode = "code"
	// ExtractNone: the whole text.
	ExtractNone = "none"
	// ExtractSlot: the final answer slot (AnswerSlot), the default of
	// math, choice and number. No slot means no answer.
	ExtractSlot = "slot"
)

var extractModes = []string{ExtractSlot, ExtractAuto, ExtractAnswer, ExtractBoxed, ExtractCode, ExtractNone}

// AnswerSlot returns the final answer slot of a model response under the
// answer-slot rule (docs/spec.md#answer-slot): reasoning in <think> is
// dropped; the last closed <answer> pair, if any, is searched; in it (or
// in the whole response) the slot is the last \boxed{} group or the value
// after the last answer phrase ("the answer is", "final answer:", "####"),
// whichever comes last; failing both, the <answer> content or a bare
// final line. It returns the slot's text (a box group's contents joined by
// ", ") and "", or "" and the reason there is no slot: none found, a
// response cut off in its reasoning, an unclosed or empty <answer>, an
// unclosed final \boxed{, several different boxes. With lenient, a
// response without any slot is read whole instead.
func AnswerSlot(pred string, lenient bool) (answer, reason string) {
	s := slot.Find(pred, lenient)
	if s.Kind == slot.None {
		return "", s.Reason
	}
	return s.All(), ""
}

// Extract returns the part of a model response that a verifier scores,
// trimmed of surrounding white space, under one of the Extract… modes, and
// false when the mode finds nothing. An unknown mode finds nothing.
func Extract(s, mode string) (string, bool) {
	var ok bool
	switch mode {
	case ExtractAuto, ExtractCode:
		if a, found := AnswerTag(s); found {
			s = a
		}
		inner, found := LastBoxed(s)
		if mode == ExtractCode {
			inner, found = LastFence(s)
		}
		if found {
			s = inner
		}
		ok = true
	case ExtractAnswer:
		s, ok = AnswerTag(s)
	case ExtractBoxed:
		s, ok = LastBoxed(s)
	case ExtractNone:
		ok = true
	case ExtractSlot:
		var reason string
		s, reason = AnswerSlot(s, false)
		ok = reason == ""
	}
	if !ok {
		return "", false
	}
	return strings.TrimSpace(s), true
}
