package verifiers

import (
	"slices"
	"strings"

	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// The answer-slot rule of the verifiers whose answers are not short values
// (docs/spec.md#answer-slot, "Structured answers"): iou, detection,
// temporal_iou and structured_f1 (structured), ocr and answer (text),
// html and svg (code).
type slotShape uint8

const (
	shapeStructured slotShape = iota // boxes, detections, intervals, dictionaries
	shapeText                        // recognised or exact text
	shapeCode                        // markup and code
	shapeWhole                       // the region whole (instruction following)
)

// Reasons of the structured slot rule.
const (
	reasonSeveral = "several different candidates in the answer slot"
	reasonNone    = "no candidate in the answer slot"
)

// regionAnswer is what a reference verifier parses under the slot rule.
type regionAnswer struct {
	text string
	// whole reports that text is the whole region (no box, fence, phrase
	// or final line narrowed it): every candidate in it must agree, and
	// nothing after the last may retract it (the verifier checks both).
	whole bool
}

// readRegion returns the text a reference verifier of the given shape
// parses, or the reason there is none:
//
//  1. the answer region (slot.FindRegion): after the reasoning, inside the
//     last closed <answer> pair;
//  2. in it, the last \boxed{} group when it comes after every ``` fence;
//     else the content of the last ``` fence; else (text) the value of the
//     last answer phrase or bare final line, or (structured) the value of
//     the last answer phrase when it holds a candidate; else the whole
//     region;
//  3. nothing after what was chosen (in the region and after </answer>)
//     may retract it.
//
// has reports whether a text holds a candidate of the verifier (used to
// accept an answer phrase's value); nil accepts any.
func readRegion(resp string, shape slotShape, has func(string) bool) (regionAnswer, string) {
	r := slot.FindRegion(resp)
	if r.Reason == slot.ReasonEmptyTag && shape == shapeText {
		return regionAnswer{}, "" // the empty text, an answer for OCR of an image without text
	}
	if r.Reason != "" {
		return regionAnswer{}, r.Reason
	}
	body := resp[r.Start:r.End]
	if shape == shapeWhole {
		return regionAnswer{text: strings.TrimSpace(body), whole: true}, ""
	}
	s := slot.Find(resp, true)
	if s.Kind == slot.None {
		return regionAnswer{}, s.Reason // malformed box, several boxes, a retraction
	}
	fs, fe, fence := lastFenceSpan(body)
	if s.Kind == slot.Boxed && (!fence || s.Start-r.Start >= fe) {
		return regionAnswer{text: s.All()}, ""
	}
	if fence {
		if slot.Retracts(body[fe:]) || slot.Retracts(r.After) {
			return regionAnswer{}, slot.ReasonRetracted
		}
		text := strings.TrimSpace(body[fs:fe])
		// Earlier fences must hold the same answer (code may come in
		// several blocks; an answer may not).
		if shape != shapeCode && differingFences(body[:strings.LastIndex(body[:fs], "```")], text) {
			return regionAnswer{}, reasonSeveral
		}
		return regionAnswer{text: text}, ""
	}
	if slot.Retracts(r.After) {
		return regionAnswer{}, slot.ReasonRetracted
	}
	switch shape {
	case shapeText:
		if s.Kind == slot.Phrase || s.Kind == slot.FinalLine && !r.Tagged {
			return regionAnswer{text: s.Text()}, ""
		}
	case shapeStructured:
		if s.Kind == slot.Phrase && (has == nil || has(s.Text())) {
			return regionAnswer{text: s.Text()}, ""
		}
	}
	return regionAnswer{text: strings.TrimSpace(body), whole: true}, ""
}

// lastFenceSpan returns the content of the last closed ``` fence of s
// (without its info string), as positions in s.
func lastFenceSpan(s string) (start, end int, ok bool) {
	end = strings.LastIndex(s, "```")
	if end < 0 {
		return 0, 0, false
	}
	open := strings.LastIndex(s[:end], "```")
	if open < 0 {
		return 0, 0, false
	}
	start = open + 3
	if nl := strings.IndexByte(s[start:end], '\n'); nl >= 0 && !strings.ContainsAny(s[start:start+nl], " \t<>{}[]") {
		start += nl + 1
	}
	return start, end, true
}

// differingFences reports whether s holds a closed ``` fence whose
// content differs from want (white space aside). At most 16 fences are
// read.
func differingFences(s, want string) bool {
	squash := func(x string) string { return strings.Join(strings.Fields(x), "") }
	w := squash(want)
	for k := 0; k < 16; k++ {
		fs, fe, ok := lastFenceSpan(s)
		if !ok {
			return false
		}
		if squash(s[fs:fe]) != w {
			return true
		}
		// Before this fence's opening ```.
		s = s[:strings.LastIndex(s[:fs], "```")]
	}
	return false
}

// oneText is the slot rule's last step for the verifiers whose answer is
// free text (answer, ocr, qa): under the slot rule a hedge between texts is
// no answer (ok false), and quotes around the whole answer are not part of
// it. With another extraction the text is read as it is.
func oneText(ans string, c *config, targets ...string) (string, bool) {
	if c.extract != ExtractSlot {
		return ans, true
	}
	if hedged(ans, targets...) {
		return "", false
	}
	return unquote(ans, targets...), true
}

// hedged reports an answer text that offers alternatives — "X or Y", "X /
// Y", "either X", "X, or maybe Y" — or runs a retraction into itself ("X
// Actually no, Y"), when no target uses that word itself.
func hedged(ans string, targets ...string) bool {
	lower := strings.ToLower(ans)
	for _, sep := range [...]string{" or ", " / ", "either ", " maybe ", " possibly ", " perhaps "} {
		if !strings.Contains(lower, sep) {
			continue
		}
		inTarget := false
		for _, t := range targets {
			if strings.Contains(strings.ToLower(t), sep) {
				inTarget = true
				break
			}
		}
		if !inTarget {
			return true
		}
	}
	// A retraction run into the answer without a sentence break: "Paris
	// Actually no, it is London" (a capitalised cue inside the text).
	for _, cue := range [...]string{" Actually", " Wait", " Oops", " Sorry", " Correction", " Scratch that", " On second thought", " No, it", " No wait"} {
		if strings.Contains(ans, cue) && !slices.ContainsFunc(targets, func(t string) bool { return strings.Contains(t, cue) }) {
			return true
		}
	}
	return false
}

// unquote removes one pair of quotes around the whole of s ("…", '…',
// “…”, ‘…’, «…», `…`) when the target is not quoted itself.
func unquote(s string, targets ...string) string {
	for _, q := range [...][2]string{{`"`, `"`}, {"'", "'"}, {"“", "”"}, {"‘", "’"}, {"«", "»"}, {"`", "`"}, {"„", "“"}} {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			for _, t := range targets {
				if strings.HasPrefix(t, q[0]) {
					return s
				}
			}
			inner := s[len(q[0]) : len(s)-len(q[1])]
			if strings.Contains(inner, q[0]) || strings.Contains(inner, q[1]) {
				return s // several quoted spans
			}
			return strings.TrimSpace(inner)
		}
	}
	// A quote left at one end only: the phrase reader skipped its
	// opening quote ("The answer is "Paris".").
	for _, q := range [...]string{`"`, "'", "”", "’", "»", "`"} {
		if strings.Count(s, q) == 1 && strings.HasSuffix(s, q) && !slices.ContainsFunc(targets, func(t string) bool { return strings.HasSuffix(t, q) }) {
			return strings.TrimSpace(strings.TrimSuffix(s, q))
		}
	}
	return s
}
