package mathverify

import (
	"sort"
	"strings"
)

// Answer phrases ("the final answer is", "####") and choice letters.

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
