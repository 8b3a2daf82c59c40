package mathverify

import (
	"regexp"
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
	if !hasMacro(s) {
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

// hasMacro reports whether s holds a macro dropMacros rewrites, in one
// pass over its backslashes.
func hasMacro(s string) bool {
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			return false
		}
		k += i
		j := k + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		switch s[k:j] {
		case `\phantom`, `\hphantom`, `\vphantom`, `\color`, `\textcolor`, `\colorbox`, `\fcolorbox`,
			`\tiny`, `\scriptsize`, `\footnotesize`, `\small`, `\normalsize`, `\large`, `\Large`, `\LARGE`, `\huge`, `\Huge`:
			return true
		}
		i = max(j, k+1)
	}
	return false
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
	var b []byte // a copy of s, made at the first line break to join
	// next finds the next opening at or after i, remembering where each
	// kind was last found so that the text is scanned once per kind.
	nb, nd := -2, -2 // absolute positions of the next \[ and $$; −1: none left
	next := func(p *int, open string, i int) int {
		if *p != -1 && *p < i {
			if k := strings.Index(s[i:], open); k >= 0 {
				*p = i + k
			} else {
				*p = -1
			}
		}
		return *p
	}
	for i := 0; i < len(s); {
		k1, k2 := next(&nb, `\[`, i), next(&nd, "$$", i)
		if k1 < 0 && k2 < 0 {
			break
		}
		k, closing := k1, `\]`
		if k1 < 0 || k2 >= 0 && k2 < k1 {
			k, closing = k2, "$$"
		}
		start := k + 2
		e := strings.Index(s[start:], closing)
		if e < 0 {
			break
		}
		e += start
		if nl := strings.IndexAny(s[start:e], "\r\n"); nl >= 0 {
			if b == nil {
				b = []byte(s)
			}
			for j := start + nl; j < e; j++ {
				if b[j] == '\n' || b[j] == '\r' {
					b[j] = ' '
				}
			}
		}
		i = e + 2
	}
	if b == nil {
		return s
	}
	return string(b)
}

// echoWords are the words that open an echoed question.
var echoWords = [...]string{"question", "problem", "user", "human", "prompt"}

// echoStart reports a line that opens an echoed question: "Question:",
// "**Problem:**", "> User:" …
func echoStart(line string) bool {
	t := strings.TrimLeft(line, " \t>*#_")
	for _, w := range echoWords {
		if len(t) > len(w) && strings.EqualFold(t[:len(w)], w) && strings.HasPrefix(strings.TrimLeft(t[len(w):], " \t*_"), ":") {
			return true
		}
	}
	return false
}

// dropEchoedQuestion removes every paragraph that opens as an echoed
// question, up to the next blank line, a line ending in "?" (kept out) or
// a line that opens an answer.
func dropEchoedQuestion(s string) string {
	found := false
	for i := 0; i < len(s) && !found; {
		e := strings.IndexByte(s[i:], '\n')
		next := len(s)
		if e >= 0 {
			next = i + e + 1
		}
		found = echoStart(s[i:next])
		i = next
	}
	if !found {
		return s
	}
	var b strings.Builder
	dropping := false
	for i := 0; i < len(s); {
		e := strings.IndexByte(s[i:], '\n')
		next := len(s)
		if e >= 0 {
			next = i + e + 1
		}
		line := s[i:next]
		switch {
		case !dropping && echoStart(line):
			dropping = true
		case dropping && (strings.TrimSpace(line) == "" || answerLine.MatchString(strings.TrimLeft(line, " \t>*#_"))):
			dropping = false
		}
		if !dropping {
			b.WriteString(line)
		} else if strings.HasSuffix(strings.TrimSpace(line), "?") {
			dropping = false
		}
		i = next
	}
	if b.Len() == len(s) {
		return s
	}
	return b.String()
}

// answerLine opens the reply after an echoed question.
var answerLine = regexp.MustCompile(`(?i)^(answer|solution|response|assistant|reply|final answer)[ \t*_]*:?`)

// Words around an answer that take it back or address the grader.
var (
	// textHedge matches \text{…} content that is not a unit but a hedge
	// or another candidate: "(or possibly 6)", "maybe".
	textHedge = regexp.MustCompile(`(?i)\b(?:maybe|possibly|perhaps|probably|either|alternatively|might|could|unsure|guess)\b|\bor\s+[-+(]?\s*\d|\(\s*[-+]?\d`)
)

// maxTail bounds the text after the slot searched for a retraction
// (slot.Retracts, the one home of the rule): one comes right after the
// answer it takes back.
const maxTail = 1000

// words is a set of lower-case ASCII words with a filter on first letter
// and length, so that most words of a text are rejected without a map
// lookup.
type words struct {
	set  map[string]bool
	lens [26][27]uint32 // bit n: a word of length n starts with these two letters (26: one-letter word)
}

func wordSet(ws ...string) *words {
	w := &words{set: make(map[string]bool, len(ws))}
	for _, x := range ws {
		w.set[x] = true
		w.lens[x[0]-'a'][second(x)] |= 1 << len(x)
	}
	return w
}

// second is the index of w's second letter in words.lens, 26 for none.
func second(w string) int {
	if len(w) < 2 || !isLetter(w[1]) {
		return 26
	}
	return int(w[1]|0x20) - 'a'
}

// has reports whether w, lowered, is in the set.
func (ws *words) has(w string) bool {
	if len(w) >= 32 || ws.lens[(w[0]|0x20)-'a'][second(w)]&(1<<len(w)) == 0 {
		return false
	}
	var buf [32]byte
	b := buf[:len(w)]
	for i := range b {
		b[i] = w[i] | 0x20
	}
	return ws.set[string(b)]
}

// letters marks the ASCII letters, for the word scans.
var letters = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	return t
}()

// A note to the grader is found around anchor words, in text lowered by
// asciiLower: each rule names its anchor words, a regexp for the text
// before an anchor (anchored at the anchor with $) and one for the text
// from the anchor on (anchored with ^); a rule with both needs both, else
// either. One pass over the words of a response and a few anchored
// matches cost far less than a scan of the whole text with every pattern.
type noteRule struct {
	anchors       []string
	before, after *regexp.Regexp
}

var graders = []string{"grader", "graders", "autograder", "evaluator", "verifier", "judge", "marker", "reviewer", "checker", "reward", "assessor"}

var noteRules = []noteRule{
	{ // "Grader: …", "evaluator, …"
		anchors: graders,
		after:   regexp.MustCompile(`^(?:auto)?(?:grader|evaluator|verifier|judge|marker|reviewer|checker|reward model|assessor)s?\s*[:,]`),
	},
	{ // "note to the grader", "dear evaluator"
		anchors: graders,
		before:  regexp.MustCompile(`\b(?:note|message|instructions?|dear|hey|hi)\s+(?:(?:to|for)\s+)?(?:the\s+)?$`),
	},
	{ // "mark this (as) correct", "give me full marks"
		anchors: []string{"correct", "right", "valid", "true", "full"},
		before:  regexp.MustCompile(`\b(?:mark|grade|score|count|consider|treat|accept|judge|rate|give)\s+(?:this|it|my answer|the answer|this answer|this response|my response|me)\s+(?:as\s+)?$`),
	},
	{ // "full marks", "maximum reward"
		anchors: []string{"full", "maximum", "max", "perfect"},
		after:   regexp.MustCompile(`^(?:full|maximum|max|perfect)\s+(?:marks?|credit|score|points|reward)\b`),
	},
	{ // "ignore the previous instructions"
		anchors: []string{"ignore"},
		after:   regexp.MustCompile(`^ignore\s+(?:all\s+)?(?:the\s+|any\s+)?(?:previous|prior|above|earlier|other)\s+(?:instructions?|text|answers?|reasoning)`),
	},
	{ // "accept this response"
		anchors: []string{"accept"},
		after:   regexp.MustCompile(`^accept this (?:answer|response)`),
	},
	{ // "this answer should be marked correct"
		anchors: []string{"marked", "graded", "scored", "accepted", "considered"},
		before:  regexp.MustCompile(`\b(?:this|my)\s+(?:answer|response)\s+(?:is|should be|must be)\s+$`),
		after:   regexp.MustCompile(`^(?:marked|graded|scored|accepted|considered)\s+(?:as\s+)?(?:correct|right|valid)`),
	},
}

// noteWords are the anchors of noteRules, as a filter.
var noteWords = func() *words {
	var all []string
	for _, r := range noteRules {
		all = append(all, r.anchors...)
	}
	return wordSet(all...)
}()

// noteIndex maps an anchor word to the rules it anchors.
var noteIndex = func() map[string][]int {
	m := map[string][]int{}
	for i, r := range noteRules {
		for _, a := range r.anchors {
			m[a] = append(m[a], i)
		}
	}
	return m
}()

// Bounds on the search for a note to the grader.
const (
	noteWindow   = 60  // bytes on each side of an anchor
	maxNoteTries = 256 // anchored matches per response
)

// afterThink returns where the text after the last </think> starts: a
// note to the grader is looked for there, where the grader reads, and
// not in the reasoning, where the words may be the problem's own.
func afterThink(s string) int {
	if k := strings.LastIndex(s, "</think>"); k >= 0 {
		return k + len("</think>")
	}
	return 0
}

// toGrader reports a note to the grader anywhere in s. It looks words up
// lowered in a small buffer and lowers only the windows around anchors,
// so that it allocates nothing on a response without anchors.
func toGrader(s string) bool {
	tries := 0
	var buf [16]byte
	for i := 0; i < len(s) && tries < maxNoteTries; {
		if !letters[s[i]] {
			i++
			continue
		}
		j := i
		for j < len(s) && letters[s[j]] {
			j++
		}
		if j-i > len(buf) || !noteWords.has(s[i:j]) {
			i = j
			continue
		}
		w := buf[:j-i]
		for k := range w {
			w[k] = s[i+k] | 0x20
		}
		for _, ri := range noteIndex[string(w)] {
			tries++
			r := &noteRules[ri]
			lo, hi := max(0, i-noteWindow), min(len(s), i+noteWindow)
			win := asciiLower(s[lo:hi])
			before, after := win[:i-lo], win[i-lo:]
			b := r.before != nil && r.before.MatchString(before)
			a := r.after != nil && r.after.MatchString(after)
			if r.before != nil && r.after != nil && a && b || (r.before == nil || r.after == nil) && (a || b) {
				return true
			}
		}
		i = j
	}
	return false
}

// asciiLower lowers ASCII letters only, so that byte offsets stay those
// of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
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

// openBound matches, at the end of a slot or right after it, what makes
// its value a bound: "(or more)", "[at least]", a "+" with no operand.
var openBound = regexp.MustCompile(`(?i)[(\[]\s*(?:or (?:more|less|fewer|greater|above|below|higher|lower)|at (?:least|most))\b|^\s*\+\s*(?:$|[.,;!)\]$<\n])`)

// boundAround reports a bound at the end of the slot pred[start:end] or
// right after it.
func boundAround(pred string, start, end int) bool {
	return trailingPlus(pred[start:end]) || openBound.MatchString(pred[max(start, end-200):min(len(pred), end+40)]) ||
		openBound.MatchString(pred[end:min(len(pred), end+40)])
}

// trailingPlus reports a value followed by a "+" that has no operand after
// it ("42+", "\boxed{42}+"): a bound, "42 or more", not the value 42.
func trailingPlus(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '+' {
			continue
		}
		p := i - 1
		for p >= 0 && (s[p] == ' ' || s[p] == '$') {
			p--
		}
		if p < 0 || !(isDigit(s[p]) || s[p] == '}' || s[p] == ')') {
			continue
		}
		n := i + 1
		for n < len(s) && (s[n] == ' ' || s[n] == '$') {
			n++
		}
		if n == len(s) || strings.IndexByte(".,;!)]}<\n", s[n]) >= 0 && !strings.HasPrefix(s[n:], `\}`) {
			return true
		}
	}
	return false
}
