package slot

import "strings"

// Bound qualifiers turn a value into a bound: "at least 5", "more than 5",
// "5 or more". A bound is not an answer to "how many": a verifier that
// reads one value refuses it.
var (
	boundBefore = [...]string{"at least", "at most", "more than", "less than", "fewer than", "greater than",
		"no more than", "no less than", "up to", "over", "under", "above", "below", "≥", "≤", ">", "<",
		`\ge`, `\le`, `\geq`, `\leq`, `\gt`, `\lt`, ">=", "<="}
	boundAfter = [...]string{"or more", "or less", "or fewer", "or greater", "or above", "or below", "or higher",
		"or lower", "at least", "at most", "at minimum", "at maximum"}
)

// Bounded reports whether the value t[start:end] is qualified as a bound
// by the words right before or after it. A relation (x ≥ 5) is the
// parser's business; this catches bounds written in words around a bare
// value.
func Bounded(t string, start, end int) bool {
	k := start
	for k > 0 && strings.IndexByte(" $(*\t", t[k-1]) >= 0 {
		k--
	}
	head := strings.ToLower(t[max(0, k-16):k])
	for _, w := range boundBefore {
		if strings.HasSuffix(head, w) && (len(head) == len(w) || !isLetter(head[len(head)-len(w)-1]) || !isLetter(w[0])) {
			// A symbol directly after a name is a relation, not a bound
			// on a bare value: "x > 5" leaves 5 to the parser.
			if !isLetter(w[0]) && w[0] != '\\' && relationBefore(head[:len(head)-len(w)]) {
				continue
			}
			return true
		}
	}
	e := end
	for e < len(t) && strings.IndexByte(" $)*\t", t[e]) >= 0 {
		e++
	}
	tail := strings.ToLower(t[e:min(len(t), e+16)])
	for _, w := range boundAfter {
		if strings.HasPrefix(tail, w) && (len(tail) == len(w) || !isLetter(tail[len(w)])) {
			return true
		}
	}
	return false
}

// relationBefore reports text ending in a one-letter name, a digit or a
// closing bracket, where a following > or < is a relation ("x > 5"), not
// a word ("is > 5").
func relationBefore(s string) bool {
	s = strings.TrimRight(s, " ")
	if s == "" {
		return false
	}
	c := s[len(s)-1]
	if c >= '0' && c <= '9' || c == ')' || c == '}' {
		return true
	}
	return isLetter(c) && (len(s) == 1 || !isLetter(s[len(s)-2]))
}
