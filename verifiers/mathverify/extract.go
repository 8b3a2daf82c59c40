package mathverify

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// Extraction priorities: lower is stronger; within a priority the
// candidate that ends last wins.
const (
	prioFinal   = 0   // "final answer is X", "final answer: X"
	prioFinalIs = 50  // "final answer … is X"; a choice letter opening a line
	prioAnswer  = 100 // "answer is X", "answer: … X"
	prioFormula = 250 // the whole text when it is a formula, not prose
	prioLast    = 300 // any math environment, number or choice letter
	prioWhole   = 400 // the whole text, when nothing else parses
)

// Bounds on the work extraction does on hostile text.
const (
	maxAnchors     = 32  // only the last occurrences of "answer" count
	maxBoxes       = 256 // only the last \boxed groups count
	maxPredWhole   = 200 // longest pred parsed as a whole
	anchorWindow   = 50  // "answer: … X" looks this far
	finalIsWindow  = 100 // "final answer … is X" looks this far
	maxJoinedParts = 64
	maxLast        = 32   // only the last environments and numbers are candidates
	maxRunLen      = 512  // longest plain-text number or arithmetic run
	maxAnswerLen   = 8192 // longest candidate handed to the parser
)

type candidate struct {
	prio       int
	start, end int
	raw        string
	plain      bool
}

// answer is what extraction yields: the parsed tree (nil if nothing
// parsed) and the text it came from.
type answer struct {
	node *node
	raw  string
}

// span is a delimited region: [start, end) outside, [cs, ce) content.
type span struct{ start, end, cs, ce int }

type extractor struct {
	t                    string
	o                    *Options
	gold                 bool
	latex, expr, choice  bool
	envs, boxes          []span
	cands                []candidate
	noDisplay, noBracket bool // no closing $$ or \] after the last failed search
	parenFailLine        int  // no \) before this index
	dollarFailLine       int  // no closing $ before this index
}

// extract finds the answer in text: the last <answer>…</answer> block if
// there is one, then candidates by priority (see doc.go). slotted marks a
// pred already cut to its answer slot: it is read whole where it parses,
// and every other constant value in it is returned in others, so that the
// caller can refuse "3 or 4".
func extract(text string, o *Options, gold, slotted bool, bud *budget) (ans answer, others []*node) {
	t, tagged := text, true
	if !slotted {
		t, tagged = answerTag(text)
	}
	x := &extractor{t: t, o: o, gold: gold, latex: o.Match&MatchLatex != 0, expr: o.Match&MatchExpr != 0,
		choice: o.Match&MatchChoice != 0, parenFailLine: -1, dollarFailLine: -1}
	x.collect(tagged)
	cands := x.cands
	// Sort indices, not the candidates themselves: moving strings costs
	// write barriers.
	order := make([]int32, len(cands))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		a, b := &cands[i], &cands[j]
		if a.prio != b.prio {
			return cmp.Compare(a.prio, b.prio)
		}
		if a.end != b.end {
			return cmp.Compare(b.end, a.end)
		}
		return cmp.Compare(a.start, b.start)
	})
	for _, i := range order {
		c := &cands[i]
		if !bud.ok() {
			break
		}
		if len(c.raw) > maxAnswerLen {
			continue
		}
		if n, err := parseAnswer(c.raw, c.plain, o.MaxDepth, bud); err == nil {
			if slotted {
				others = x.otherValues(c, n, bud)
			}
			return answer{node: n, raw: strings.TrimSpace(c.raw)}, others
		}
	}
	if len(order) > 0 {
		return answer{raw: strings.TrimSpace(cands[order[0]].raw)}, nil
	}
	if gold || slotted {
		return answer{raw: strings.TrimSpace(t)}, nil
	}
	return answer{}, nil
}

// negatedAt reports a value that the text rules out: "5, not 6", "5
// rather than 6", "5 instead of 6".
func negatedAt(t string, i int) bool {
	k := i
	for k > 0 && (t[k-1] == ' ' || t[k-1] == '$' || t[k-1] == '(') {
		k--
	}
	head := strings.ToLower(t[max(0, k-12):k])
	for _, w := range [...]string{"not", "n't", "rather than", "instead of", "never", "but not"} {
		if strings.HasSuffix(head, w) && (len(head) == len(w) || !isLetter(head[len(head)-len(w)-1]) || w == "n't") {
			return true
		}
	}
	return false
}

// maxOthers bounds the other values otherValues parses.
const maxOthers = 8

// otherValues returns the constant values of the plain candidates of a
// slot that lie outside the chosen candidate c: in "the answer is 3 or 4"
// the 4. Nothing when c itself is not constant (it names variables).
func (x *extractor) otherValues(c *candidate, n *node, bud *budget) []*node {
	if len(freeVars(n).names) != 0 {
		return nil
	}
	var out []*node
	tried := 0
	for i := range x.cands {
		d := &x.cands[i]
		if d.prio != prioLast || d.end > c.start && d.start < c.end || tried >= maxOthers || len(d.raw) > maxAnswerLen ||
			negatedAt(x.t, d.start) {
			continue
		}
		tried++
		if m, err := parseAnswer(d.raw, d.plain, x.o.MaxDepth, bud); err == nil && len(freeVars(m).names) == 0 {
			out = append(out, m)
		}
	}
	return out
}

// answerTag returns the content of the last <answer> block, unclosed
// blocks running to the end.
func answerTag(s string) (string, bool) {
	if !strings.Contains(s, "<answer>") {
		return s, false
	}
	i := strings.LastIndex(s, "<answer>")
	if i < 0 {
		return s, false
	}
	c := s[i+len("<answer>"):]
	if j := strings.Index(c, "</answer>"); j >= 0 {
		c = c[:j]
	}
	return c, true
}

// tail keeps the last k values added, so that long texts cost no more
// memory than short ones.
type tail[T any] struct {
	k     int
	buf   []T
	start int
}

func (r *tail[T]) add(v T) {
	if len(r.buf) < r.k {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % r.k
}

// items returns the values in the order they were added.
func (r *tail[T]) items() []T {
	if r.start == 0 {
		return r.buf
	}
	return append(r.buf[r.start:len(r.buf):len(r.buf)], r.buf[:r.start]...)
}

func (x *extractor) add(c candidate) {
	x.cands = append(x.cands, c)
}

func (x *extractor) collect(tagged bool) {
	t := x.t
	if x.latex {
		if x.o.BoxedPriority >= 0 {
			x.findBoxes()
			for _, g := range x.groupBoxes() {
				x.add(g)
			}
		}
		x.findEnvs()
		groups := tail[candidate]{k: maxLast}
		for i := 0; i < len(x.envs); {
			c, next := x.envGroup(i)
			groups.add(c)
			i = next
		}
		x.cands = append(x.cands, groups.items()...)
	}
	if x.expr {
		runs := tail[candidate]{k: maxLast}
		for i := 0; i < len(t); {
			for i < len(t) && !runStartByte[t[i]] {
				i++
			}
			if i == len(t) {
				break
			}
			end, raw, ok := x.runAt(i, true)
			if ok {
				runs.add(candidate{prio: prioLast, start: i, end: end, raw: raw, plain: true})
			}
			// A failed scan fails from any later start inside it too.
			i = max(end, i+1)
		}
		x.cands = append(x.cands, runs.items()...)
	}
	if x.choice {
		x.choiceCandidates()
	}
	x.anchors()
	trimmed := strings.TrimSpace(t)
	if trimmed == "" || !x.latex && !x.expr || x.o.BoxedPriority < 0 && (strings.Contains(t, `\boxed`) || strings.Contains(t, `\fbox`)) {
		return
	}
	switch {
	case formulaLike(t):
		x.add(candidate{prio: prioFormula, start: 0, end: len(t), raw: t, plain: !x.latex})
	case x.gold || tagged || len(trimmed) <= maxPredWhole:
		x.add(candidate{prio: prioWhole, start: 0, end: len(t), raw: t, plain: !x.latex})
	}
}

// mathWords are the letter runs of three or more letters a formula may
// contain outside a command.
var mathWords = setOf("sin", "cos", "tan", "sec", "csc", "cot", "log", "exp", "sqrt", "abs", "max", "min",
	"gcd", "lcm", "and", "pi", "inf", "infty", "infinity", "pct", "percent", "percentage",
	"arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "floor", "ceil")

// formulaLike reports whether s is a bare formula rather than prose: no
// math delimiters, no \boxed, and no word of three or more letters that is
// not a function, unit or connective (words inside \text{} are allowed).
func formulaLike(s string) bool {
	if len(s) > 2000 || strings.ContainsAny(s, "$") || strings.Contains(s, `\(`) || strings.Contains(s, `\[`) ||
		strings.Contains(s, `\boxed`) || strings.Contains(s, `\fbox`) {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			j := i + 1
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			if name := s[i+1 : j]; textCmds[name] || name == "begin" || name == "end" {
				if _, end, ok := braced(s, skipSpaces(s, j)); ok {
					j = end
				}
			}
			if j == i+1 {
				j++
			}
			i = j
		case isLetter(c):
			j := i
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			if w := strings.ToLower(s[i:j]); j-i >= 3 && !mathWords[w] && !unitWords[w] {
				return false
			}
			i = j
		default:
			i++
		}
	}
	return true
}

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

// runAt scans a plain-text number or arithmetic expression starting at
// t[i]: "1,000.99", "2/3", "-\frac{10}{9}", "28 percent". free marks a
// scan over the whole text, which refuses a number glued to letters or to
// an algebraic expression ("x + 1", "K2A"); at an anchor those checks are
// off.
func (x *extractor) runAt(i int, free bool) (int, string, bool) {
	t := x.t
	if i >= len(t) || !runStart(t, i) {
		return i + 1, "", false
	}
	if free && !leftClear(t, i) {
		return i + 1, "", false
	}
	if len(t) > i+maxRunLen {
		t = t[:i+maxRunLen]
	}
	j := i
	good := -1      // end of the last complete operand
	var opens []int // positions of unclosed (
	goodOpens := 0
	operand := true
scan:
	for j < len(t) {
		k := j
		for k < len(t) && t[k] == ' ' {
			k++
		}
		if k-j > 1 || k == len(t) {
			break
		}
		c := t[k]
		if operand {
			switch {
			case c == '(':
				opens = append(opens, k)
				j = k + 1
				continue
			case (c == '-' || c == '+') && k+1 < len(t) && (isDigit(t[k+1]) || t[k+1] == '.' || t[k+1] == '(' || t[k+1] == '\\'):
				j = k + 1
				continue
			}
			if e := numberEnd(t, k); e > k {
				j = e
			} else if e := fracEnd(t, k); e > k {
				j = e
			} else {
				break scan
			}
			operand = false
			good, goodOpens = j, len(opens)
			continue
		}
		switch {
		case c == ')' && len(opens) > 0:
			opens = opens[:len(opens)-1]
			j = k + 1
			good, goodOpens = j, len(opens)
		case strings.IndexByte("+-*/^", c) >= 0:
			j, operand = k+1, true
		case strings.HasPrefix(t[k:], "×") || strings.HasPrefix(t[k:], "÷") || strings.HasPrefix(t[k:], "·"):
			j, operand = k+2, true
		case strings.HasPrefix(t[k:], `\cdot`) || strings.HasPrefix(t[k:], `\times`) || strings.HasPrefix(t[k:], `\div`):
			e := k + 1
			for e < len(t) && isLetter(t[e]) {
				e++
			}
			j, operand = e, true
		default:
			break scan
		}
	}
	if good < 0 {
		return j, "", false
	}
	if good == len(t) && len(t) < len(x.t) {
		return good, "", false // longer than maxRunLen
	}
	start := i
	if goodOpens > 0 {
		// Drop unclosed parentheses: "(7, 6" keeps "6".
		start = opens[goodOpens-1] + 1
		for start < good && t[start] == ' ' {
			start++
		}
	}
	end := good
	// What follows: a percent mark is part of the answer, a unit is
	// skipped, other letters mean the number was part of a word.
	k := end
	for k < len(t) && t[k] == ' ' && k-end < 2 {
		k++
	}
	suffix := ""
	switch {
	case strings.HasPrefix(t[k:], "%"):
		suffix, end = "%", k+1
	case strings.HasPrefix(t[k:], `\%`):
		suffix, end = "%", k+2
	case k < len(t) && isLetter(t[k]):
		e := k
		for e < len(t) && isLetter(t[e]) {
			e++
		}
		w := strings.ToLower(t[k:e])
		switch {
		case percentWords[w]:
			suffix, end = "%", e
		case unitWords[w] || len(w) == 1 && strings.Contains("mgslh", w):
		case free && k == end:
			return good, "", false
		case free && (w == "x" || w == "y" || w == "n"):
			return good, "", false
		}
	}
	return end, t[start:good] + suffix, true
}

// runStartByte marks the bytes a plain-text number can start with.
var runStartByte = func() (m [256]bool) {
	for _, c := range "0123456789.-(\\" {
		m[c] = true
	}
	return
}()

func runStart(t string, i int) bool {
	c := t[i]
	switch {
	case isDigit(c):
		return true
	case c == '.' || c == '-' || c == '(':
		return i+1 < len(t) && (isDigit(t[i+1]) || c != '.' && (t[i+1] == '(' || t[i+1] == '.' || t[i+1] == '\\' && fracEnd(t, i+1) > i+1))
	case c == '\\':
		return i+1 < len(t) && strings.IndexByte("dts", t[i+1]) >= 0 && fracEnd(t, i) > i
	}
	return false
}

// leftClear reports whether the text before t[i] leaves a number there
// standing on its own: not x_1, x^2, K2, or the 1 of "x + 1".
func leftClear(t string, i int) bool {
	if i == 0 {
		return true
	}
	p := t[i-1]
	if isLetter(p) || isDigit(p) || strings.IndexByte("_^\\{.", p) >= 0 {
		return false
	}
	k := i - 1
	for k >= 0 && t[k] == ' ' {
		k--
	}
	if k >= 0 && strings.IndexByte("+-*/^", t[k]) >= 0 && (t[k] != '-' || k < i-1 || t[i] != '-') {
		k--
		for k >= 0 && t[k] == ' ' {
			k--
		}
		if k >= 0 && (isLetter(t[k]) || t[k] == ')' || t[k] == '}' || t[k] == ']') {
			return false
		}
	}
	return true
}

// numberEnd returns the end of the number at t[i] with digit groups and a
// decimal part (point or comma), or i.
func numberEnd(t string, i int) int {
	j := i
	for j < len(t) && isDigit(t[j]) {
		j++
	}
	if j == i && !(j+1 < len(t) && t[j] == '.' && isDigit(t[j+1])) {
		return i
	}
	for j < len(t) {
		switch {
		case (t[j] == ',' || t[j] == '.') && j+1 < len(t) && isDigit(t[j+1]):
			j++
		case t[j] == ' ' && j > i && isDigit(t[j-1]) && threeDigits(t, j+1):
			j++
		case strings.HasPrefix(t[j:], "{,}") && j+3 < len(t) && isDigit(t[j+3]):
			j += 3
		case strings.HasPrefix(t[j:], `\,`) && threeDigits(t, j+2):
			j += 2
		case strings.HasPrefix(t[j:], `,\!`):
			k := skipSpaces(t, j+3)
			if !threeDigits(t, k) {
				return j
			}
			j = k
		case (t[j] == 'e' || t[j] == 'E') && j+1 < len(t) && isDigit(t[j+1]) && j > i && isDigit(t[j-1]):
			k := j + 1
			for k < len(t) && isDigit(t[k]) {
				k++
			}
			if k < len(t) && isLetter(t[k]) {
				return j
			}
			j = k
			continue
		default:
			return j
		}
		for j < len(t) && isDigit(t[j]) {
			j++
		}
	}
	return j
}

// fracEnd returns the end of \frac{a}{b} or \sqrt{a} at t[i] (also
// \dfrac, \tfrac), or i.
func fracEnd(t string, i int) int {
	if i >= len(t) || t[i] != '\\' {
		return i
	}
	args := 0
	n := 0
	for _, p := range [...]string{`\frac`, `\dfrac`, `\tfrac`, `\sqrt`} {
		if strings.HasPrefix(t[i:], p) && (i+len(p) == len(t) || !isLetter(t[i+len(p)])) {
			n = len(p)
			args = 2
			if p == `\sqrt` {
				args = 1
			}
			break
		}
	}
	if n == 0 {
		return i
	}
	j := i + n
	for a := 0; a < args; a++ {
		j = skipSpaces(t, j)
		if j < len(t) && isDigit(t[j]) {
			j++
			continue
		}
		c, end, ok := braced(t, j)
		if !ok || c == "" {
			return i
		}
		// Letters outside command names mean an expression in variables,
		// which is not a bare number.
		for k := 0; k < len(c); k++ {
			if c[k] == '\\' {
				for k+1 < len(c) && isLetter(c[k+1]) {
					k++
				}
				continue
			}
			if isLetter(c[k]) {
				return i
			}
		}
		j = end
	}
	return j
}

// anchors adds the values that follow "final answer is", "answer:" and
// the like.
func (x *extractor) anchors() {
	t := x.t
	hits := tail[int]{k: maxAnchors}
	for _, stem := range [...]string{"nswer", "NSWER"} {
		for i := 1; i+5 <= len(t); i++ {
			k := strings.Index(t[i:], stem)
			if k < 0 {
				break
			}
			i += k
			if a := i - 1; t[a]|0x20 == 'a' && (a == 0 || !isLetter(t[a-1])) {
				hits.add(a)
			}
		}
	}
	sorted := hits.items()
	sort.Ints(sorted)
	// GSM8K ends a solution with "#### 72".
	if k := strings.LastIndex(t, "####"); k >= 0 {
		x.anchor(k+4, prioFinal, 0)
	}
	for _, h := range sorted {
		final := precededBy(t, h, "final")
		q := h + 6
		if q < len(t) && t[q]|0x20 == 's' {
			q++
		}
		if q < len(t) && isLetter(t[q]) {
			continue
		}
		q = skipStars(t, q)
		prio := prioAnswer
		if final {
			prio = prioFinal
		}
		switch {
		case q < len(t) && t[q] == ':':
			x.anchor(q+1, prio, 0)
			x.anchor(q+1, prioAnswer, anchorWindow)
		case wordAt(t, q, "is") || wordAt(t, q, "are"):
			x.anchor(q+3, prio, 0)
		}
		if final {
			for k := h + 6; k < len(t) && k < h+6+finalIsWindow && t[k] != '\n'; k++ {
				if t[k] == ' ' && wordAt(t, k+1, "is") {
					x.anchor(k+3, prioFinalIs, 0)
				}
			}
		}
	}
}

func precededBy(t string, i int, w string) bool {
	k := i
	for k > 0 && (t[k-1] == ' ' || t[k-1] == '*') {
		k--
	}
	return k >= len(w) && strings.EqualFold(t[k-len(w):k], w) && (k == len(w) || !isLetter(t[k-len(w)-1]))
}

func skipStars(t string, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '*') {
		i++
	}
	return i
}

func wordAt(t string, i int, w string) bool {
	return i+len(w) <= len(t) && strings.EqualFold(t[i:i+len(w)], w) && (i+len(w) == len(t) || !isLetter(t[i+len(w)]))
}

// anchor adds the candidate at pos (after quotes, stars and colons), or
// with a window the first candidate starting within window bytes.
func (x *extractor) anchor(pos, prio, window int) {
	t := x.t
	q := pos
	for q < len(t) {
		switch {
		case strings.IndexByte(" \t\n*\":", t[q]) >= 0:
			q++
		case strings.HasPrefix(t[q:], `\"`):
			q += 2
		case t[q] == '$' && !x.latex:
			q++
		default:
			goto found
		}
	}
	return
found:
	for k := q; k < len(t) && k <= q+window; k++ {
		if c, ok := x.valueAt(k, window == 0); ok {
			c.prio = prio
			x.add(c)
			return
		}
	}
}

// valueAt returns the candidate that starts exactly at t[i].
func (x *extractor) valueAt(i int, immediate bool) (candidate, bool) {
	t := x.t
	if x.latex {
		if x.o.BoxedPriority >= 0 && t[i] == '\\' {
			for k, b := range x.boxes {
				if b.start == i {
					saved := x.boxes
					x.boxes = x.boxes[k:]
					g := x.groupBoxes()[0]
					x.boxes = saved
					return g, true
				}
			}
		}
		if sp, ok := x.envAt(i); ok {
			return x.localEnvGroup(sp), true
		}
	}
	if x.expr {
		if end, raw, ok := x.runAt(i, !immediate); ok {
			return candidate{start: i, end: end, raw: raw, plain: true}, true
		}
	}
	if x.choice {
		if l, end, ok := x.choiceAt(i, x.o.Choices); ok {
			return candidate{start: i, end: end, raw: l}, true
		}
	}
	// "The answer is (C).": a lone capital that ends an answer phrase.
	if l, end, ok := x.choiceAt(i, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"); ok && immediate {
		k := end
		for k < len(t) && t[k] == ' ' {
			k++
		}
		if k == len(t) || strings.IndexByte(".,;:!?)\"'*\n", t[k]) >= 0 {
			return candidate{start: i, end: end, raw: l}, true
		}
	}
	return candidate{}, false
}

// choiceAt reads a choice letter at t[i]: "C", "(C)", "**C**".
func (x *extractor) choiceAt(i int, letters string) (string, int, bool) {
	t := x.t
	j := i
	if j < len(t) && t[j] == '(' {
		j++
	}
	if j >= len(t) || !isLetter(t[j]) || !strings.Contains(letters, string(t[j])) {
		return "", 0, false
	}
	l := string(t[j])
	j++
	if j < len(t) && (isLetter(t[j]) || isDigit(t[j])) {
		return "", 0, false
	}
	if t[i] == '(' {
		if j >= len(t) || t[j] != ')' {
			return "", 0, false
		}
		j++
	}
	return l, j, true
}

// choiceCandidates adds choice letters standing alone, and more strongly
// those that open a line: "B. because …", "(C) 12".
func (x *extractor) choiceCandidates() {
	t := x.t
	found := tail[candidate]{k: maxLast}
	defer func() { x.cands = append(x.cands, found.items()...) }()
	for i := 0; i < len(t); i++ {
		if i > 0 && (isLetter(t[i-1]) || isDigit(t[i-1])) {
			continue
		}
		l, end, ok := x.choiceAt(i, x.o.Choices)
		if !ok {
			continue
		}
		prio := prioLast
		k := i - 1
		for k >= 0 && (t[k] == ' ' || t[k] == '*') {
			k--
		}
		if (k < 0 || t[k] == '\n') && end < len(t) && strings.IndexByte(".):", t[end]) >= 0 {
			prio = prioFinalIs
		}
		found.add(candidate{prio: prio, start: i, end: end, raw: l})
	}
}
