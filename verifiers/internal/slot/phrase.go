package slot

import "strings"

// vspan is the value after an answer phrase.
type vspan struct{ start, end int }

// phraseVerbs may follow "answer" in an answer phrase.
var phraseVerbs = [...]string{"is", "are", "would be", "should be", "will be", "must be", "equals"}

// lastPhrase returns the start of the last answer phrase of t ("the final
// answer is", "Answer:", "answer =", "the correct option is", "####", or
// backwards "X is the answer") and the span of its value, or −1. A phrase
// whose value opens with a negation ("is not 4") is not an answer phrase.
// It scans backwards from the end and stops at the first phrase, so a
// long response costs one pass over its bytes at most.
func lastPhrase(t string) (int, vspan) {
	for i := len(t) - 1; i >= 0; i-- {
		c := t[i] | 0x20
		if t[i] == '#' {
			if i >= 3 && t[i-3:i+1] == "####" && !negated(t, i+1) {
				return i - 3, valueSpan(t, i+1)
			}
			continue
		}
		if c != 'a' && c != 'o' && c != 'c' && c != 's' && c != 'r' || i > 0 && isLetter(t[i-1]) {
			continue
		}
		if start, v, ok := phraseAt(t, i); ok {
			return start, v
		}
	}
	return -1, vspan{}
}

// phraseAt reads an answer phrase whose noun starts at t[a].
func phraseAt(t string, a int) (int, vspan, bool) {
	var noun string
	for _, n := range [...]string{"answer", "option", "choice", "solution", "result"} {
		if len(t)-a >= len(n) && strings.EqualFold(t[a:a+len(n)], n) {
			noun = n
			break
		}
	}
	if noun == "" {
		return 0, vspan{}, false
	}
	q := a + len(noun)
	if q < len(t) && (t[q] == 's' || t[q] == 'S') {
		q++
	}
	if q < len(t) && isLetter(t[q]) {
		return 0, vspan{}, false
	}
	if noun != "option" && noun != "choice" && isBackPhrase(t, a, q) {
		if s, e, ok := backValue(t, a); ok {
			return s, vspan{s, e}, true
		}
		return 0, vspan{}, false
	}
	switch noun {
	case "solution", "result":
		return 0, vspan{}, false // only backwards: "x = 3 is the solution."
	case "option", "choice":
		p := prevWord(t, a)
		if !(wordAtFold(t, p, "correct") || wordAtFold(t, p, "right") || wordAtFold(t, p, "best") || wordAtFold(t, p, "final")) {
			return 0, vspan{}, false
		}
	}
	q = skip(t, q, " *_")
	after := -1
	switch {
	case q < len(t) && (t[q] == ':' || t[q] == '='):
		after = q + 1
	case q < len(t) && (t[q] == '$' || strings.HasPrefix(t[q:], `\[`) || strings.HasPrefix(t[q:], `\(`)) && q > a+len(noun):
		after = q
	default:
		for _, v := range phraseVerbs {
			if wordAtFold(t, q, v) {
				after = q + len(v)
				break
			}
		}
	}
	if after < 0 || negated(t, after) {
		return 0, vspan{}, false
	}
	start := a
	for range 3 { // "the final answer", "the correct option"
		p := prevWord(t, start)
		if p < 0 || !(wordAtFold(t, p, "final") || wordAtFold(t, p, "the") || wordAtFold(t, p, "correct") ||
			wordAtFold(t, p, "right") || wordAtFold(t, p, "best")) {
			break
		}
		start = p
	}
	return start, valueSpan(t, after), true
}

// negated reports whether the value after an answer phrase opens with a
// negation: "the answer is not 4" names no answer.
func negated(t string, i int) bool {
	i = skip(t, i, " \t*:\"'")
	return wordAtFold(t, i, "not") || wordAtFold(t, i, "never") || wordAtFold(t, i, "unknown")
}

// valueSpan returns the value that starts at or after i: the rest of the
// sentence (or, when the line is empty, of the next non-empty line), math
// environments and brace groups read whole.
func valueSpan(t string, i int) vspan {
	i = skip(t, i, " \t*:\"'")
	if i < len(t) && (t[i] == '\n' || t[i] == '\r') {
		i = skip(t, i, " \t\r\n*:")
	}
	if i >= len(t) {
		return vspan{i, i} // an empty value: the phrase still counts, and scores 0
	}
	limit := min(len(t), i+MaxValue)
	j := i
	depth := 0
scan:
	for j < limit {
		c := t[j]
		switch {
		case c == '\\' && j+1 < len(t) && (t[j+1] == '(' || t[j+1] == '['):
			closer := `\)`
			if t[j+1] == '[' {
				closer = `\]`
			}
			e := strings.Index(t[j+2:limit], closer)
			if e < 0 {
				j = limit
				break scan
			}
			j += 2 + e + 2
			continue
		case c == '\\':
			j += 2
			continue
		case c == '$':
			n := 1
			if j+1 < len(t) && t[j+1] == '$' {
				n = 2
			}
			e := strings.Index(t[j+n:limit], t[j:j+n])
			if e < 0 {
				j = limit
				break scan
			}
			j += n + e + n
			continue
		case c == '{':
			depth++
		case c == '}':
			if depth > 0 {
				depth--
			}
		case depth > 0:
		case c == '\n':
			break scan
		case c == '!' || c == '?':
			break scan
		case c == '.' && (j+1 == len(t) || t[j+1] == ' ' || t[j+1] == '\n' || t[j+1] == '\r' || t[j+1] == '<') && !(j >= 2 && isLetter(t[j-1]) && t[j-2] == '.'):
			break scan
		case c == '<' && (strings.HasPrefix(t[j:], "<|") || strings.HasPrefix(t[j:], "</")):
			break scan
		}
		j++
	}
	return vspan{i, min(j, len(t))}
}

// finalLine returns the last non-empty line of t when it is a bare answer:
// at most MaxFinalLine bytes and a formula (at most one word of prose), or
// a sentence that ends with its only math environment.
func finalLine(t string) (int, int, bool) {
	e := len(t)
	for e > 0 && strings.IndexByte(" \t\r\n", t[e-1]) >= 0 {
		e--
	}
	if e == 0 {
		return 0, 0, false
	}
	s := strings.LastIndexByte(t[:e], '\n') + 1
	for s < e && (t[s] == ' ' || t[s] == '\t') {
		s++
	}
	line := t[s:e]
	if len(line) > MaxFinalLine {
		return 0, 0, false
	}
	if proseWords(line) <= 1 && strings.ContainsFunc(line, func(r rune) bool {
		return r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '\\' || r > 0x7f
	}) {
		return s, e, true
	}
	if endsWithOnlyEnv(line) {
		return s, e, true
	}
	return 0, 0, false
}

// concludingWords open a concluding sentence.
var concludingWords = [...]string{"therefore", "thus", "hence", "so", "finally", "consequently", "in conclusion"}

// concluding returns the last sentence of t when it concludes: it ends
// the text with "." or "!" and opens with "Therefore", "Thus", "Hence",
// "So", "Finally", "Consequently" or "In conclusion" — at a sentence or
// line start, or capitalised after a formula that lacks its full stop
// ("… = 2/3 Therefore, the probability is 2/3.") — and is at most
// MaxFinalLine bytes. A response cut off mid-sentence has none.
func concluding(t string) (int, int, bool) {
	e := len(t)
	for e > 0 && strings.IndexByte(" \t\r\n", t[e-1]) >= 0 {
		e--
	}
	if e == 0 || t[e-1] != '.' && t[e-1] != '!' {
		return 0, 0, false
	}
	found := -1
	for s := e - 1; s >= 0 && e-s <= MaxFinalLine; s-- {
		if s > 0 && isLetter(t[s-1]) || !isLetter(t[s]) {
			if s > 0 && (t[s-1] == '\n' || t[s-1] == ' ' && s >= 2 && strings.IndexByte(".!?", t[s-2]) >= 0) {
				break // the sentence starts here
			}
			continue
		}
		for _, w := range concludingWords {
			if wordAtFold(t, s, w) && (t[s] < 'a' || atSentenceStart(t, s)) {
				found = s // the last concluding word of the last sentence
			}
		}
		if found >= 0 || atSentenceStart(t, s) {
			break
		}
	}
	if found < 0 {
		return 0, 0, false
	}
	return found, e, true
}

// atSentenceStart reports whether t[s] opens a sentence or line.
func atSentenceStart(t string, s int) bool {
	k := s
	for k > 0 && (t[k-1] == ' ' || t[k-1] == '*' || t[k-1] == '\t') {
		k--
	}
	return k == 0 || t[k-1] == '\n' || k < s && strings.IndexByte(".!?", t[k-1]) >= 0
}

// formulaWords are the letter runs of three or more letters that a bare
// answer may hold without being prose: functions, constants, units,
// connectives and the words of a choice ("Option B").
var formulaWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`sin cos tan sec csc cot log exp sqrt abs max min gcd lcm and pi inf infty
		infinity pct percent percentage arcsin arccos arctan sinh cosh tanh floor ceil mod pmod deg degree degrees
		option choice cm mm km kg mg mph kmh sec min hrs hour hours minute minutes second seconds meter meters
		metre metres inch inches foot feet yard yards mile miles dollar dollars cent cents unit units sq cubic
		liter liters litre litres radian radians rad ohm volt volts watt watts joule joules newton newtons
		kelvin celsius fahrenheit true false yes none`) {
		formulaWords[w] = true
	}
}

// proseWords counts the words of three or more letters in s that are not
// formula words, outside command names and \text{…} groups.
func proseWords(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			j := i + 1
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			name := s[i+1 : j]
			if j == i+1 {
				j = min(j+1, len(s)) // an escaped character
			}
			switch name {
			case "begin", "end", "text", "textbf", "textrm", "mathrm", "mbox", "operatorname", "mathbf":
				if j < len(s) && s[j] == '{' {
					if e := strings.IndexByte(s[j:], '}'); e >= 0 {
						j += e + 1
					}
				}
			}
			i = j
		case isLetter(c):
			j := i
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			if j-i >= 3 && !formulaWords[strings.ToLower(s[i:j])] {
				n++
			}
			i = j
		default:
			i++
		}
	}
	return n
}

// endsWithOnlyEnv reports whether line holds exactly one math environment
// ($…$, $$…$$, \(…\), \[…\]) and nothing after it but punctuation.
func endsWithOnlyEnv(line string) bool {
	type env struct{ open, close string }
	count, lastEnd := 0, -1
	for i := 0; i < len(line); {
		var e env
		switch {
		case strings.HasPrefix(line[i:], "$$"):
			e = env{"$$", "$$"}
		case line[i] == '$':
			e = env{"$", "$"}
		case strings.HasPrefix(line[i:], `\(`):
			e = env{`\(`, `\)`}
		case strings.HasPrefix(line[i:], `\[`):
			e = env{`\[`, `\]`}
		case line[i] == '\\':
			i += 2
			continue
		default:
			i++
			continue
		}
		k := strings.Index(line[i+len(e.open):], e.close)
		if k < 0 {
			return false
		}
		count++
		i += len(e.open) + k + len(e.close)
		lastEnd = i
	}
	return count == 1 && strings.Trim(line[lastEnd:], " .,;!") == ""
}

func skip(t string, i int, set string) int {
	for i < len(t) && strings.IndexByte(set, t[i]) >= 0 {
		i++
	}
	return i
}

// prevWord returns the start of the word before position i (skipping
// spaces and *), or −1.
func prevWord(t string, i int) int {
	k := i
	for k > 0 && (t[k-1] == ' ' || t[k-1] == '*') {
		k--
	}
	e := k
	for k > 0 && isLetter(t[k-1]) {
		k--
	}
	if k == e {
		return -1
	}
	return k
}

func wordAtFold(t string, i int, w string) bool {
	return i >= 0 && i+len(w) <= len(t) && strings.EqualFold(t[i:i+len(w)], w) && (i+len(w) == len(t) || !isLetter(t[i+len(w)]))
}

// isBackPhrase reports "… is the answer." / "… is our final answer": the
// noun at a ends its sentence and is preceded by "is the", "is our", "is
// my", optionally with "final".
func isBackPhrase(t string, a, q int) bool {
	if q < len(t) && t[q] != '.' && t[q] != '\n' && t[q] != '!' {
		return false
	}
	p := prevWord(t, a)
	if p >= 0 && wordAtFold(t, p, "final") {
		p = prevWord(t, p)
	}
	if p < 0 || !(wordAtFold(t, p, "the") || wordAtFold(t, p, "our") || wordAtFold(t, p, "my")) {
		return false
	}
	p = prevWord(t, p)
	return p >= 0 && wordAtFold(t, p, "is")
}

// backValue returns the sentence before "is the answer" that names the
// value: from the sentence start to the "is".
func backValue(t string, a int) (int, int, bool) {
	p := prevWord(t, a)
	for k := 0; k < 3 && p >= 0 && !wordAtFold(t, p, "is"); k++ {
		p = prevWord(t, p)
	}
	if p < 0 || !wordAtFold(t, p, "is") {
		return 0, 0, false
	}
	e := p
	s := e
	for s > 0 && e-s < MaxValue {
		c := t[s-1]
		if c == '\n' || (c == '.' || c == '!' || c == '?') && s < len(t) && t[s] == ' ' {
			break
		}
		s--
	}
	if strings.TrimSpace(t[s:e]) == "" {
		return 0, 0, false
	}
	return s, e, true
}
