package mathverify

import (
	"sort"
	"strings"
)

// Math environments ($…$, \(…\), \[…\]) and \boxed groups.

// envAt returns the math environment opening at t[i], if any.
func (x *extractor) envAt(i int) (span, bool) {
	t := x.t
	if i >= len(t) || i > 0 && t[i-1] == '\\' {
		return span{}, false
	}
	switch {
	case strings.HasPrefix(t[i:], "$$"):
		if x.noDisplay {
			return span{}, false
		}
		for j := i + 2; j+1 < len(t); j++ {
			if t[j] == '\\' {
				j++
				continue
			}
			if t[j] == '$' && t[j+1] == '$' {
				return span{i, j + 2, i + 2, j}, j > i+2
			}
		}
		x.noDisplay = true
	case t[i] == '$':
		if i < x.dollarFailLine {
			return span{}, false
		}
		for j := i + 1; j < len(t); j++ {
			switch t[j] {
			case '\n':
				x.dollarFailLine = j
				return span{}, false
			case '\\':
				j++
			case '$':
				return span{i, j + 1, i + 1, j}, j > i+1
			}
		}
		x.dollarFailLine = len(t)
	case strings.HasPrefix(t[i:], `\(`):
		if i < x.parenFailLine {
			return span{}, false
		}
		for j := i + 2; j+1 < len(t); j++ {
			if t[j] == '\n' {
				x.parenFailLine = j
				return span{}, false
			}
			if t[j] == '\\' && t[j+1] == ')' {
				return span{i, j + 2, i + 2, j}, j > i+2
			}
		}
		x.parenFailLine = len(t)
	case strings.HasPrefix(t[i:], `\[`):
		if x.noBracket {
			return span{}, false
		}
		if j := strings.Index(t[i+2:], `\]`); j >= 0 {
			return span{i, i + 2 + j + 2, i + 2, i + 2 + j}, j > 0
		}
		x.noBracket = true
	}
	return span{}, false
}

func (x *extractor) findEnvs() {
	t := x.t
	envs := tail[span]{k: 4 * maxLast}
	defer func() { x.envs = envs.items() }()
	for i := 0; i < len(t); {
		k := strings.IndexAny(t[i:], `$\`)
		if k < 0 {
			return
		}
		i += k
		if sp, ok := x.envAt(i); ok {
			envs.add(sp)
			i = sp.end
			continue
		}
		if t[i] == '\\' {
			i += 2
			continue
		}
		i++
	}
}

// envGroup joins the environment envs[i] with those that follow it after
// "and", "or" or a comma: "$1$ and $2$", "$21,16$ or $11$".
func (x *extractor) envGroup(i int) (candidate, int) {
	parts := []string{x.content(x.envs[i])}
	j := i + 1
	for j < len(x.envs) && len(parts) < maxJoinedParts && listSep(x.t[x.envs[j-1].end:x.envs[j].start]) {
		parts = append(parts, x.content(x.envs[j]))
		j++
	}
	first, lastSp := x.envs[i], x.envs[j-1]
	raw := strings.Join(parts, ", ")
	if x.percentAfter(lastSp.end) {
		raw += ` \%`
	}
	return candidate{prio: prioLast, start: first.start, end: lastSp.end, raw: raw}, j
}

// localEnvGroup is envGroup for an environment found at an anchor, which
// global pairing of $ signs may have missed.
func (x *extractor) localEnvGroup(sp span) candidate {
	parts := []string{x.content(sp)}
	end := sp.end
	for len(parts) < maxJoinedParts {
		k := end
		for k < len(x.t) && x.t[k] != '$' && x.t[k] != '\\' && k-end < 16 {
			k++
		}
		if !listSep(x.t[end:k]) {
			break
		}
		next, ok := x.envAt(k)
		if !ok {
			break
		}
		parts = append(parts, x.content(next))
		end = next.end
	}
	raw := strings.Join(parts, ", ")
	if x.percentAfter(end) {
		raw += ` \%`
	}
	return candidate{start: sp.start, end: end, raw: raw}
}

func (x *extractor) content(sp span) string { return strings.TrimSpace(x.t[sp.cs:sp.ce]) }

// listSep reports whether s only separates list items: "and", "or", ",".
func listSep(s string) bool {
	if len(s) > 24 {
		return false
	}
	w := strings.Trim(s, " \t\n,;")
	if strings.EqualFold(w, "and") || strings.EqualFold(w, "or") {
		return true
	}
	return w == "" && strings.ContainsAny(s, ",;")
}

// percentAfter reports whether a percent sign or word follows position i
// (after closing delimiters): "$28$ %", "\boxed{20} percent".
func (x *extractor) percentAfter(i int) bool {
	t := x.t
	if len(t) > i+16 {
		t = t[:i+16]
	}
	for i < len(t) {
		switch {
		case t[i] == ' ' || t[i] == '$' || t[i] == '}':
			i++
		case strings.HasPrefix(t[i:], `\)`) || strings.HasPrefix(t[i:], `\]`):
			i += 2
		default:
			goto check
		}
	}
	return false
check:
	rest := t[i:]
	if strings.HasPrefix(rest, "%") || strings.HasPrefix(rest, `\%`) {
		return true
	}
	for _, w := range [...]string{"percentage", "percent", "pct"} {
		if len(rest) >= len(w) && strings.EqualFold(rest[:len(w)], w) && (len(rest) == len(w) || !isLetter(rest[len(w)])) {
			return true
		}
	}
	return false
}

// findBoxes lists the outermost \boxed{…} and \fbox{…} groups.
func (x *extractor) findBoxes() {
	t := x.t
	var opens []int
	for i := 0; i < len(t); i++ {
		k := strings.IndexByte(t[i:], '\\')
		if k < 0 {
			break
		}
		i += k
		var n int
		switch {
		case strings.HasPrefix(t[i:], `\boxed`):
			n = len(`\boxed`)
		case strings.HasPrefix(t[i:], `\fbox`):
			n = len(`\fbox`)
		default:
			continue
		}
		if j := skipSpaces(t, i+n); j < len(t) && t[j] == '{' {
			opens = append(opens, i, j)
		}
	}
	if len(opens) == 0 {
		return
	}
	// Match every brace once, in one pass, so that nested or unclosed
	// boxes cost linear time.
	want := make(map[int]int, len(opens)/2)
	for k := 0; k < len(opens); k += 2 {
		want[opens[k+1]] = opens[k]
	}
	var stack []int
	for i := opens[1]; i < len(t); i++ {
		k := strings.IndexAny(t[i:], `\{}`)
		if k < 0 {
			break
		}
		i += k
		switch t[i] {
		case '\\':
			i++
		case '{':
			stack = append(stack, i)
		case '}':
			if len(stack) == 0 {
				continue
			}
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if start, ok := want[o]; ok {
				x.boxes = append(x.boxes, span{start, i + 1, o + 1, i})
			}
		}
	}
	sort.Slice(x.boxes, func(a, b int) bool { return x.boxes[a].start < x.boxes[b].start })
	outer := x.boxes[:0]
	for _, b := range x.boxes {
		if n := len(outer); n > 0 && b.start < outer[n-1].end {
			continue
		}
		outer = append(outer, b)
	}
	if len(outer) > maxBoxes {
		outer = outer[len(outer)-maxBoxes:]
	}
	x.boxes = outer
}

// groupBoxes joins consecutive boxes that list parts of one answer:
// "\boxed{1} and \boxed{2}", "\boxed{(2,2)} \quad \text{and} \quad
// \boxed{(6,2)}", "y_1 = \boxed{…} and y_2 = \boxed{…}".
func (x *extractor) groupBoxes() []candidate {
	var out []candidate
	for i := 0; i < len(x.boxes); {
		parts := []string{x.content(x.boxes[i])}
		j := i + 1
		for j < len(x.boxes) && len(parts) < maxJoinedParts && boxSep(x.t[x.boxes[j-1].end:x.boxes[j].start], x.gold) {
			parts = append(parts, x.content(x.boxes[j]))
			j++
		}
		raw := strings.Join(parts, ", ")
		if x.percentAfter(x.boxes[j-1].end) {
			raw += ` \%`
		}
		out = append(out, candidate{prio: x.o.BoxedPriority, start: x.boxes[i].start, end: x.boxes[j-1].end, raw: raw})
		i = j
	}
	return out
}

// boxSep reports whether the text between two boxes joins them into one
// answer. The gold, which is trusted, may put up to four words of any kind
// between them ("\boxed{1} papers and \boxed{2}"); a pred only the words
// "and"/"or", up to four words inside \text{}, and a "name =" before the
// second box.
func boxSep(s string, gold bool) bool {
	if len(s) > 200 {
		return false
	}
	s = strings.TrimSpace(s)
	// "… and y_2 = " before the next box names the second unknown.
	if strings.HasSuffix(s, "=") {
		s = strings.TrimRight(s[:len(s)-1], " ")
		k := len(s)
		for k > 0 && (isLetter(s[k-1]) || isDigit(s[k-1]) || strings.IndexByte("_{}^'", s[k-1]) >= 0) {
			k--
		}
		s = s[:k]
	}
	for _, noise := range [...]string{`\quad`, `\qquad`, `\(`, `\)`, `\[`, `\]`, `\,`, `\;`, `\!`, `\ `, `\\`, "$", "~", "&"} {
		s = strings.ReplaceAll(s, noise, " ")
	}
	var bare, text []string
	for s != "" {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			bare = append(bare, strings.Fields(s)...)
			break
		}
		bare = append(bare, strings.Fields(s[:i])...)
		j := i + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		if !textCmds[s[i+1:j]] {
			bare = append(bare, s[i:j])
			s = s[j:]
			continue
		}
		c, end, ok := braced(s, skipSpaces(s, j))
		if !ok {
			return false
		}
		text = append(text, strings.Fields(c)...)
		s = s[end:]
	}
	words := 0
	for _, w := range append(bare, text...) {
		if strings.Trim(w, ",.;:") != "" {
			words++
		}
	}
	if gold {
		return words <= 4
	}
	if len(text) > 4 {
		return false
	}
	for _, w := range bare {
		w = strings.ToLower(strings.Trim(w, ",.;:"))
		if w != "" && w != "and" && w != "or" {
			return false
		}
	}
	return true
}
