// Package slot finds the final answer slot of a model response: the one
// place a grader reads the answer from. It is the extraction layer the
// math, choice and number verifiers share, so all three read the same
// place and refuse the same shapes (see docs/spec.md#answer-slot).
//
// The rule, in order:
//
//  0. Only the model's answering turn is read: when the response holds a
//     chat template's turns (ChatML, Llama 3, Phi-3), from after the last
//     assistant header; in any case up to the first end-of-turn token
//     (<|im_end|>, <|im_start|>, <|endoftext|>, <|eot_id|>, <|end|>).
//  1. Reasoning is not an answer. Text up to the last </think> (or
//     </thinking>, </reasoning>) is dropped; a <think> left open means the
//     response was cut off inside its reasoning and has no answer.
//  2. If <answer> tags are present, the last closed pair is the region
//     searched below. An <answer> left open after the last closed pair,
//     or an empty pair, is a malformed slot: no answer, never a fallback
//     to earlier text.
//  3. Inside the region, the slot is whichever comes last: the last group
//     of \boxed{…} (or \fbox{…}), boxes joined only by "and", "or",
//     commas, spacing, short \text{} or "name =" forming one group; or the
//     value after the last answer phrase ("the answer is", "final
//     answer:", "the correct option is", "####", or backwards "X is the
//     answer."). Earlier boxes whose text differs are passed on as Others
//     for the verifier to compare by value. A \boxed{ that never closes
//     after every closed one is malformed.
//  4. With neither, inside <answer> tags the whole tag content is the
//     slot; without tags the slot is a bare final line (at most
//     MaxFinalLine bytes: a formula rather than prose, or a sentence ending
//     with its only math environment) or else a concluding sentence
//     ("Therefore, the total is 42.").
//  5. Otherwise there is no slot and the response earns nothing.
//  6. Nothing after the slot may withdraw it (Retracts): in the rest of
//     the region, after </answer>, or inside an <answer> read whole.
//
// FindRegion is steps 0–2 alone, for verifiers whose answers are not
// short values (boxes, detections, intervals, dictionaries, text).
//
// Lenient mode, an explicit parameter of each verifier, replaces step 5
// by "the whole response after the reasoning".
package slot

import (
	"slices"
	"strings"
)

// Kind says where a slot was found.
type Kind uint8

const (
	None      Kind = iota // no answer slot; Reason says why
	Boxed                 // the last group of \boxed{…}
	Phrase                // the value after an answer phrase
	Tag                   // the whole content of <answer>…</answer>
	FinalLine             // a bare final line
	Whole                 // lenient mode: the whole response
)

func (k Kind) String() string {
	return [...]string{"none", "boxed", "phrase", "tag", "final line", "whole"}[k]
}

// Limits that keep slot finding linear and the slots small.
const (
	// MaxFinalLine bounds a bare final line.
	MaxFinalLine = 300
	// MaxValue bounds the value read after an answer phrase.
	MaxValue  = 1000
	maxGroup  = 64 // boxes in one group
	maxOthers = 8  // earlier boxes that differ in text from the last
)

// Slot is the final answer slot of a response.
type Slot struct {
	Kind Kind
	// Start and End delimit, in the response, the text a full parser
	// should read: the box group with its \boxed wrappers, the answer
	// phrase with its value, the tag content or the final line.
	Start, End int
	// Values are the answer texts, trimmed: one per box of the group, the
	// phrase's value, the tag content or the line.
	Values []string
	// Others are the contents of earlier boxes outside the group whose
	// text differs from the slot's (at most maxOthers): the verifier must
	// find each equal to the answer, or refuse several different answers.
	Others []string
	// Reason explains a None slot.
	Reason string
}

// Text returns the slot's values joined by ", ".
func (s Slot) Text() string { return strings.Join(s.Values, ", ") }

// All returns the slot's values and Others joined by ", ": the text a
// verifier that requires one answer reads, so that an earlier box with a
// different value makes it several.
func (s Slot) All() string {
	if len(s.Others) == 0 {
		return s.Text()
	}
	return s.Text() + ", " + strings.Join(s.Others, ", ")
}

// Find returns the answer slot of resp under the rule of the package
// documentation; lenient turns "no slot" into the whole response.
func Find(resp string, lenient bool) Slot {
	off, end, tagged, reason := region(resp)
	if reason != "" {
		return Slot{Reason: reason}
	}
	body := resp[off:end]
	if strings.TrimSpace(body) == "" {
		return Slot{Reason: reasonEmpty}
	}
	s := locate(body, tagged)
	if s.Kind == None && lenient && s.Reason == reasonNoSlot {
		t := strings.TrimSpace(body)
		i := strings.Index(body, t)
		s = Slot{Kind: Whole, Start: i, End: i + len(t), Values: []string{t}}
	}
	if s.Kind != None {
		// Nothing after the slot may withdraw it: the rest of the region
		// and what follows the </answer>.
		after := ""
		if tagged {
			after = endOfTurn(resp)[end+len("</answer>"):]
		}
		// The content of an <answer> pair is read whole: a retraction
		// inside it, after its first sentence, withdraws it too.
		if Retracts(body[s.End:]) || Retracts(after) || s.Kind == Tag && Retracts(s.Text()) {
			return Slot{Reason: ReasonRetracted}
		}
		s.Start += off
		s.End += off
	}
	return s
}

// ReasonEmptyTag is the reason of an empty or blank <answer> pair: no
// answer, except to a verifier for which empty text is an answer (OCR of
// an image without text).
const ReasonEmptyTag = "empty <answer>"

// Reasons for a None slot.
const (
	reasonNoSlot     = "no answer slot (no <answer>, \\boxed{}, answer phrase or bare final line)"
	reasonEmpty      = "empty response (after the reasoning)"
	reasonOpenThink  = "response ends inside its reasoning (<think> not closed)"
	reasonOpenAnswer = "malformed <answer> (opened, never closed)"
	reasonEmptyTag   = ReasonEmptyTag
	reasonOpenBox    = "malformed final \\boxed{ (never closed)"
	reasonBoxes      = "several different \\boxed{} answers"
	reasonEmptyValue = "nothing after the answer phrase"
	reasonEmptyBox   = "empty \\boxed{}"
)

// region returns the part of resp searched for the slot, [off, end), or a
// reason why there is none. A closed <answer> pair narrows the region to
// its content (tagged).
func region(resp string) (off, end int, tagged bool, reason string) {
	// Only the model's answering turn is read (step 0).
	begin, end := turn(resp)
	resp = resp[:end]
	off = begin
	// One forward pass over the '<' of the turn finds the last of each tag.
	var lastOpenThink, lastCloseThink = -1, -1
	var thinkEnd int
	for i := begin; i < len(resp); {
		k := strings.IndexByte(resp[i:], '<')
		if k < 0 {
			break
		}
		i += k
		for _, tag := range [...]string{"<think>", "<thinking>", "<reasoning>", "</think>", "</thinking>", "</reasoning>"} {
			if strings.HasPrefix(resp[i:], tag) {
				if tag[1] == '/' {
					lastCloseThink, thinkEnd = i, i+len(tag)
				} else {
					lastOpenThink = i
				}
				break
			}
		}
		i++
	}
	if lastOpenThink > lastCloseThink {
		return 0, 0, false, reasonOpenThink
	}
	if lastCloseThink >= 0 {
		off = thinkEnd
	}
	body := resp[off:]
	o, c := -1, -1
	for i := 0; i < len(body); {
		k := strings.IndexByte(body[i:], '<')
		if k < 0 {
			break
		}
		i += k
		switch {
		case strings.HasPrefix(body[i:], "<answer>"):
			o = i
		case strings.HasPrefix(body[i:], "</answer>"):
			c = i
		}
		i++
	}
	switch {
	case o < 0 && c < 0:
		return off, end, false, ""
	case o > c:
		return 0, 0, false, reasonOpenAnswer
	case o < 0: // a stray </answer>: read what precedes it
		return off, off + c, false, ""
	}
	// The last <answer> before the last </answer>.
	o = strings.LastIndex(body[:c], "<answer>")
	cs := off + o + len("<answer>")
	if strings.TrimSpace(resp[cs:off+c]) == "" {
		return 0, 0, false, reasonEmptyTag
	}
	return cs, off + c, true, ""
}

// locate finds the slot inside a region; tagged marks the content of an
// <answer> pair.
func locate(t string, tagged bool) Slot {
	boxes, openAfter := findBoxes(t)
	phrase, value := lastPhrase(t)
	lastBoxEnd := -1
	if len(boxes) > 0 {
		lastBoxEnd = boxes[len(boxes)-1].end
	}
	if openAfter >= 0 && openAfter > phrase {
		return Slot{Reason: reasonOpenBox}
	}
	if len(boxes) > 0 && (phrase < 0 || lastBoxEnd > phrase) {
		return boxSlot(t, boxes)
	}
	if phrase >= 0 {
		v := strings.TrimSpace(t[value.start:value.end])
		if v == "" {
			return Slot{Reason: reasonEmptyValue}
		}
		return Slot{Kind: Phrase, Start: phrase, End: value.end, Values: []string{v}}
	}
	if tagged {
		v := strings.TrimSpace(t)
		i := strings.Index(t, v)
		return Slot{Kind: Tag, Start: i, End: i + len(v), Values: []string{v}}
	}
	if ls, le, ok := finalLine(t); ok {
		return lineSlot(t, ls, le)
	}
	if ls, le, ok := concluding(t); ok {
		return lineSlot(t, ls, le)
	}
	return Slot{Reason: reasonNoSlot}
}

// lineSlot is the FinalLine slot t[s:e], trimmed as strings.TrimSpace
// trims; nothing left is no slot.
func lineSlot(t string, s, e int) Slot {
	v := strings.TrimSpace(t[s:e])
	if v == "" {
		return Slot{Reason: reasonNoSlot}
	}
	s += strings.Index(t[s:e], v)
	return Slot{Kind: FinalLine, Start: s, End: s + len(v), Values: []string{v}}
}

// span is a box: [start, end) with its wrapper, [cs, ce) its content.
type span struct{ start, end, cs, ce int }

// findBoxes lists the outermost closed \boxed{…}/\fbox{…} of t in order,
// and the position of a \boxed{ opened after the last closed one that
// never closes (−1 if none). One pass over the braces.
func findBoxes(t string) (boxes []span, openAfter int) {
	openAfter = -1
	type frame struct {
		brace, start int
		box          bool
	}
	var stack []frame
	open := 0 // box frames on the stack: a box closes outermost when it is the only one
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			n := 0
			switch {
			case strings.HasPrefix(t[i:], `\boxed`):
				n = len(`\boxed`)
			case strings.HasPrefix(t[i:], `\fbox`):
				n = len(`\fbox`)
			}
			if n > 0 {
				j := i + n
				for j < len(t) && t[j] == ' ' {
					j++
				}
				if j < len(t) && t[j] == '{' {
					stack = append(stack, frame{j, i, true})
					open++
					i = j
					continue
				}
			}
			if i+1 < len(t) && (t[i+1] == '{' || t[i+1] == '}') {
				i++ // an escaped brace is not a brace
			}
		case '{':
			stack = append(stack, frame{i, i, false})
		case '}':
			if len(stack) == 0 {
				continue
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !f.box {
				continue
			}
			if open--; open > 0 {
				continue
			}
			boxes = append(boxes, span{f.start, i + 1, f.brace + 1, i})
		}
	}
	for _, f := range stack {
		if f.box && (len(boxes) == 0 || f.start > boxes[len(boxes)-1].start) {
			openAfter = f.start
			break
		}
	}
	return boxes, openAfter
}

// boxSlot makes the slot of the last box group and checks that boxes
// outside it agree with it.
func boxSlot(t string, boxes []span) Slot {
	first := len(boxes) - 1
	for first > 0 && len(boxes)-first < maxGroup && groupSep(t[boxes[first-1].end:boxes[first].start]) {
		first--
	}
	group := boxes[first:]
	vals := make([]string, len(group))
	for i, b := range group {
		vals[i] = strings.TrimSpace(t[b.cs:b.ce])
		if vals[i] == "" {
			return Slot{Reason: reasonEmptyBox}
		}
	}
	want := squash(strings.Join(vals, ","))
	var others []string
	for _, b := range boxes[:first] {
		o := strings.TrimSpace(t[b.cs:b.ce])
		if squash(o) == want || slices.ContainsFunc(others, func(x string) bool { return squash(x) == squash(o) }) {
			continue
		}
		// An earlier box that reads differently must still mean the same
		// (5 and 5.0): the verifier decides, given Others. A list group
		// with other boxes, or too many, is refused here.
		if len(group) != 1 || len(others) == maxOthers {
			return Slot{Reason: reasonBoxes}
		}
		others = append(others, o)
	}
	end := group[len(group)-1].end
	end = percentAfter(t, end)
	return Slot{Kind: Boxed, Start: group[0].start, End: end, Values: vals, Others: others}
}

// squash drops white space and $ so that "\boxed{ 3 }" agrees with
// "\boxed{3}".
func squash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '$' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// groupSep reports whether the text between two boxes joins them into one
// answer (a list, which never equals a single value): "and", "or",
// commas and spacing, up to four words inside \text{}, and a "name ="
// naming the next box ("y_1 = \boxed{…} and y_2 = \boxed{…}").
func groupSep(s string) bool {
	if len(s) > 200 {
		return false
	}
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "=") {
		s = strings.TrimRight(s[:len(s)-1], " ")
		k := len(s)
		for k > 0 && (isLetter(s[k-1]) || s[k-1] >= '0' && s[k-1] <= '9' || strings.IndexByte("_{}^'", s[k-1]) >= 0) {
			k--
		}
		s = s[:k]
	}
	for _, noise := range [...]string{`\quad`, `\qquad`, `\(`, `\)`, `\[`, `\]`, `\,`, `\;`, `\!`, `\ `, `\\`, "$", "~", "&"} {
		s = strings.ReplaceAll(s, noise, " ")
	}
	textWords := 0
	for s != "" {
		i := strings.IndexByte(s, '\\')
		head := s
		if i >= 0 {
			head = s[:i]
		}
		for _, w := range strings.FieldsFunc(head, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\n' || r == '\t' || r == '.' }) {
			if w = strings.ToLower(w); w != "and" && w != "or" {
				return false
			}
		}
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		if name := s[i+1 : j]; name != "text" && name != "textbf" && name != "mbox" && name != "textrm" {
			return false
		}
		j = skip(s, j, " ")
		if j >= len(s) || s[j] != '{' {
			return false
		}
		e := strings.IndexByte(s[j:], '}')
		if e < 0 {
			return false
		}
		textWords += len(strings.Fields(s[j+1 : j+e]))
		s = s[j+e+1:]
	}
	return textWords <= 4
}

// percentAfter extends end over a percent mark that follows a box.
func percentAfter(t string, end int) int {
	k := end
	for k < len(t) && k-end < 4 && (t[k] == ' ' || t[k] == '$') {
		k++
	}
	switch {
	case strings.HasPrefix(t[k:], `\%`):
		return k + 2
	case strings.HasPrefix(t[k:], "%"):
		return k + 1
	case hasWordFold(t[k:], "percent"):
		return k + len("percent")
	}
	return end
}

func hasWordFold(s, w string) bool {
	return len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) && (len(s) == len(w) || !isLetter(s[len(w)]))
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
