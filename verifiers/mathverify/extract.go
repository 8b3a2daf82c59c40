package mathverify

import (
	"cmp"
	"slices"
	"strings"

	"github.com/rlpost/rlpost/verifiers/internal/slot"
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
	// bounded marks a value written as a bound in the slot: "at least 5".
	bounded bool
	// limited marks a slot answer over maxAnswerLen.
	limited bool
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
// there is one, then candidates by priority (see doc.go). A non-zero kind
// marks a pred already cut to its answer slot of that kind: every other
// constant value in it is returned in others, so that the caller can
// refuse "3 or 4"; a box slot is read as its box group only (a malformed
// box is not read by the pieces inside it), and a slot candidate over
// maxAnswerLen is a limit hit, not skipped.
func extract(text string, o *Options, gold bool, kind slot.Kind, bud *budget) (ans answer, others []*node) {
	slotted := kind != slot.None
	t, tagged := text, true
	if !slotted {
		t, tagged = answerTag(text)
	}
	x := &extractor{t: t, o: o, gold: gold, latex: o.Match&MatchLatex != 0, expr: o.Match&MatchExpr != 0,
		choice: o.Match&MatchChoice != 0, parenFailLine: -1, dollarFailLine: -1}
	x.collect(tagged)
	if kind == slot.Phrase {
		x.phraseValue()
	}
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
	boxOnly := kind == slot.Boxed && o.BoxedPriority >= 0
	for _, i := range order {
		c := &cands[i]
		if !bud.ok() {
			break
		}
		if boxOnly && c.prio != o.BoxedPriority {
			break
		}
		if len(c.raw) > maxAnswerLen {
			if slotted {
				return answer{limited: true}, nil
			}
			continue
		}
		if n, err := parseAnswer(c.raw, c.plain, o.MaxDepth, bud); err == nil {
			a := answer{node: n, raw: strings.TrimSpace(c.raw)}
			if slotted {
				others = x.otherValues(c, n, bud)
				a.bounded = n.k != kRel && slot.Bounded(t, c.start, c.end)
			}
			return a, others
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

// phraseValue adds the whole value of an answer phrase slot as one
// candidate ranked above the loose numbers and environments in it, so that
// "the answer is x>2." reads x > 2 rather than 2, and "(C) 24" stays an
// AMC answer; the value right after the phrase (prioAnswer) still comes
// first.
func (x *extractor) phraseValue() {
	s := slot.Find(x.t, false)
	if s.Kind != slot.Phrase || len(s.Values) != 1 {
		return
	}
	v := strings.TrimRight(s.Values[0], ".!;, ")
	i := strings.LastIndex(x.t, v)
	// Math environments are candidates of their own, with their rules
	// (an inline $ does not span lines).
	if v == "" || i < 0 || len(v) > maxAnswerLen || strings.ContainsAny(v, "$\n") {
		return
	}
	x.add(candidate{prio: prioFormula, start: i, end: i + len(v), raw: v, plain: !x.latex})
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
