package mathverify

import (
	"regexp"
	"slices"
	"strings"
)

// A response is read as it renders (docs/spec.md#math-verifier, "LaTeX as
// rendered"): what a reader cannot see is not an answer, and markup that
// only changes how an answer looks does not change it. rendered rewrites a
// response before its answer slot is looked for:
//
//   - fenced code blocks (``` or ~~~ lines) are dropped: a template of
//     <answer> tags or a \boxed{} inside code is shown as code, not given;
//   - LaTeX comments are dropped: a % that is not escaped (\%) and not a
//     percent mark (right after a digit, a closing bracket or a letter,
//     at most one space between) starts a comment up to the end of its
//     line;
//   - \phantom{…}, \hphantom{…}, \vphantom{…} render blank and are dropped
//     with their argument;
//   - colour and size macros are transparent: \color{red} and the size
//     switches (\large, \Huge, …) are dropped, \textcolor{red}{x} and
//     \colorbox{red}{x} become {x};
//   - display math split over lines (\[ … \] and $$ … $$) is joined onto
//     one line, as it renders;
//   - an echoed question, a paragraph that opens with "Question:",
//     "Problem:" or "User:", is dropped up to the next blank line or an
//     "Answer:"/"Solution:" line: a box in the prompt echoed back is not
//     the answer.
//
// It works in one pass per rule over the text and never grows it.
func rendered(s string) string {
	if strings.Contains(s, "```") || strings.Contains(s, "~~~") {
		s = dropFences(s)
	}
	if strings.IndexByte(s, '%') >= 0 {
		s = dropComments(s)
	}
	if strings.IndexByte(s, '\\') >= 0 {
		s = dropMacros(s)
		s = joinDisplays(s)
	}
	if strings.IndexByte(s, ':') >= 0 {
		s = dropEchoedQuestion(s)
	}
	return s
}

// dropFences removes closed fenced code blocks.
func dropFences(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	open := -1 // index of the opening fence line
	var fence string
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case open < 0 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			open, fence = i, t[:3]
		case open >= 0 && strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "":
			open = -1
			b.WriteByte('\n')
		case open < 0:
			b.WriteString(l)
		}
	}
	if open >= 0 { // never closed: not a code block, keep it
		for _, l := range lines[open:] {
			b.WriteString(l)
		}
	}
	return b.String()
}

// dropComments removes LaTeX comments: an unescaped % that is not a
// percent mark, to the end of its line.
func dropComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '%')
		if k < 0 {
			b.WriteString(s[i:])
			break
		}
		k += i
		b.WriteString(s[i:k])
		if k > 0 && s[k-1] == '\\' || percentMark(s, k) {
			b.WriteByte('%')
			i = k + 1
			continue
		}
		e := strings.IndexByte(s[k:], '\n')
		if e < 0 {
			break
		}
		i = k + e
	}
	return b.String()
}

// percentMark reports whether the % at s[k] follows a value: a digit, a
// letter, a closing bracket or $, at most one space before it; a % that
// a box or an answer tag follows is a comment all the same.
func percentMark(s string, k int) bool {
	// "% \boxed{5}" is a comment whatever precedes it.
	rest := strings.TrimLeft(s[k+1:], " \t")
	if strings.HasPrefix(rest, `\boxed`) || strings.HasPrefix(rest, `\fbox`) || strings.HasPrefix(rest, "<answer") {
		return false
	}
	j := k - 1
	if j >= 0 && s[j] == ' ' {
		j--
	}
	if j < 0 {
		return false
	}
	c := s[j]
	return isDigit(c) || isLetter(c) || c == '}' || c == ')' || c == ']' || c == '$'
}

// Macros that render nothing, colour and size.
var (
	blankMacros = [...]string{`\phantom`, `\hphantom`, `\vphantom`}
	sizeMacros  = [...]string{`\tiny`, `\scriptsize`, `\footnotesize`, `\small`, `\normalsize`, `\large`, `\Large`, `\LARGE`, `\huge`, `\Huge`}
)

// dropMacros removes \phantom and friends with their argument, colour
// switches with their colour, and size switches; \textcolor{c}{x} and
// \colorbox{c}{x} keep {x}.
func dropMacros(s string) string {
	if !strings.Contains(s, `\phantom`) && !strings.Contains(s, `\hphantom`) && !strings.Contains(s, `\vphantom`) &&
		!strings.Contains(s, `color`) && !hasAny(s, sizeMacros[:]) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			b.WriteString(s[i:])
			break
		}
		k += i
		b.WriteString(s[i:k])
		j := k + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		name := s[k:j]
		switch {
		case inList(name, blankMacros[:]):
			i = skipArg(s, j)
		case name == `\color`:
			i = skipArg(s, j)
		case name == `\textcolor` || name == `\colorbox`:
			i = skipArg(s, j) // the colour; the text stays as a group
		case name == `\fcolorbox`:
			i = skipArg(s, skipArg(s, j))
		case inList(name, sizeMacros[:]):
			i = j
		default:
			if j == k+1 && j < len(s) { // \{, \%, \\: two bytes
				j++
			}
			b.WriteString(s[k:j])
			i = j
		}
	}
	return b.String()
}

// skipArg returns the end of the macro argument at s[i:]: a braced group,
// else one character, after spaces.
func skipArg(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) {
		return i
	}
	if s[i] == '{' {
		if _, end, ok := braced(s, i); ok {
			return end
		}
		return len(s)
	}
	if s[i] == '\\' {
		j := i + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		return max(j, i+2)
	}
	return i + 1
}

func hasAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func inList(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// joinDisplays puts display math that spans lines on one line.
func joinDisplays(s string) string {
	if !strings.Contains(s, `\[`) && !strings.Contains(s, "$$") {
		return s
	}
	b := []byte(s)
	for i := 0; i+1 < len(b); i++ {
		var closing string
		switch {
		case b[i] == '\\' && b[i+1] == '[':
			closing = `\]`
		case b[i] == '$' && b[i+1] == '$':
			closing = "$$"
		case b[i] == '\\':
			i++
			continue
		default:
			continue
		}
		e := strings.Index(s[i+2:], closing)
		if e < 0 {
			break
		}
		e += i + 2
		for k := i + 2; k < e; k++ {
			if b[k] == '\n' || b[k] == '\r' {
				b[k] = ' '
			}
		}
		i = e + 1
	}
	return string(b)
}

// echoedQuestion opens a paragraph that repeats the prompt.
var echoedQuestion = regexp.MustCompile(`(?im)^[ \t>*#_]*(question|problem|user|human|prompt)[ \t*_]*:`)

// dropEchoedQuestion removes every paragraph that opens as an echoed
// question, up to the next blank line or a line that opens an answer.
func dropEchoedQuestion(s string) string {
	locs := echoedQuestion.FindAllStringIndex(s, 16)
	if locs == nil {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, l := range locs {
		if l[0] < prev {
			continue
		}
		b.WriteString(s[prev:l[0]])
		end := len(s)
		for i := l[1]; i < len(s); {
			k := strings.IndexByte(s[i:], '\n')
			if k < 0 {
				break
			}
			next := i + k + 1
			e := strings.IndexByte(s[next:], '\n')
			if e < 0 {
				e = len(s) - next
			}
			line := s[next : next+e]
			if strings.TrimSpace(line) == "" || answerLine.MatchString(strings.TrimLeft(line, " \t>*#_")) {
				end = next
				break
			}
			if strings.HasSuffix(strings.TrimSpace(s[i:next]), "?") {
				end = next
				break
			}
			i = next
		}
		prev = end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// answerLine opens the reply after an echoed question.
var answerLine = regexp.MustCompile(`(?i)^(answer|solution|response|assistant|reply|final answer)[ \t*_]*:?`)

// Words around an answer that take it back or address the grader.
var (
	// retraction matches text after the answer slot that retracts or
	// replaces it ("Actually, no, it is 6", "wait", "scratch that") or
	// hedges it with another candidate ("or possibly 6").
	retraction = regexp.MustCompile(`(?i)\b(?:actually|wait|scratch that|correction|on second thought|i was wrong|i made a mistake|my mistake|that'?s (?:wrong|incorrect|not right)|(?:is|was) (?:wrong|incorrect)|oops|sorry|nope|not sure|unsure|i'?m not certain|or (?:maybe|possibly|perhaps)|the (?:correct|real|true|actual) answer|it should be|should have been)\b|\bno[,.!]|\b(?:maybe|possibly|perhaps|alternatively)\b[^.\n]{0,40}\d`)
	// graderNote matches a note that asks the grader for a score
	// instead of giving an answer.
	graderNote = regexp.MustCompile(`(?i)(\b(grader|graders|autograder|evaluator|verifier|judge|marker|reviewer|checker|reward model|assessor)s?\b\s*[:,]|\b(note|message|instructions?) (to|for) the (grader|evaluator|verifier|judge|marker|reviewer|checker|reward model)|\b(mark|grade|score|count|consider|treat|accept|judge|rate)\s+(this|it|my answer|the answer|this answer|this response|my response|me)\s+(as\s+)?(correct|right|valid|true|full|1\b)|\b(full|maximum|max|perfect)\s+(marks?|credit|score|points|reward)\b|\bignore\s+(all\s+)?(the\s+)?(previous|prior|above|earlier|other)\s+(instructions?|text|answers?|reasoning)|\b(this|my)\s+(answer|response)\s+(is|should be|must be)\s+(marked|graded|considered|scored|accepted)\b)`)
	// textHedge matches \text{…} content that is not a unit but a hedge
	// or another candidate: "(or possibly 6)", "maybe".
	textHedge = regexp.MustCompile(`(?i)\b(?:maybe|possibly|perhaps|probably|either|alternatively|might|could|unsure|guess)\b|\bor\s+[-+(]?\s*\d|\(\s*[-+]?\d`)
)

// maxTail bounds the text after the slot searched for a retraction: one
// comes right after the answer it takes back.
const maxTail = 1000

// retracted reports text after the answer slot that takes the answer
// back, replaces it or hedges it.
func retracted(tail string) bool {
	return retraction.MatchString(tail[:min(len(tail), maxTail)])
}

// noteAnchors are the words a note to the grader holds; graderNote runs
// only around them, so that a 64 KiB response costs a few windows.
var noteAnchors = [...]string{"grader", "evaluator", "verifier", "judge", "marker", "reviewer", "checker", "reward",
	"assessor", "credit", "marks", "score", "ignore", "correct", "right", "valid", "accept"}

// Bounds on the search for a note to the grader.
const (
	noteWindow     = 100 // bytes on each side of an anchor
	maxNoteWindows = 32  // the last anchors only
)

// toGrader reports a note to the grader anywhere in s.
func toGrader(s string) bool {
	low := strings.ToLower(s)
	type win struct{ lo, hi int }
	var wins []win
	for _, a := range noteAnchors {
		for end, n := len(low), 0; n < maxNoteWindows; n++ {
			k := strings.LastIndex(low[:end], a)
			if k < 0 {
				break
			}
			wins = append(wins, win{max(0, k-noteWindow), min(len(s), k+len(a)+noteWindow)})
			end = k
		}
	}
	slices.SortFunc(wins, func(a, b win) int { return b.lo - a.lo })
	for i, w := range wins {
		if i == maxNoteWindows {
			break
		}
		if graderNote.MatchString(s[w.lo:w.hi]) {
			return true
		}
	}
	return false
}

// textHedged reports a \text{…} in the answer that hedges it rather than
// naming a unit: "5 \text{(or possibly 6)}".
func textHedged(ans string) bool {
	for i := 0; i < len(ans); {
		k := strings.Index(ans[i:], `\text`)
		if k < 0 {
			return false
		}
		j := skipSpaces(ans, i+k+len(`\text`))
		c, end, ok := braced(ans, j)
		if !ok {
			return false
		}
		if textHedge.MatchString(c) {
			return true
		}
		i = end
	}
	return false
}
