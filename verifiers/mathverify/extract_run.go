package mathverify

import (
	"strings"
)

// Plain-text numbers and arithmetic runs.

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
		case k == j+1 && isDigit(c) && j > i && isDigit(t[j-1]):
			// A mixed number, "1 1/2": an integer, one space, a fraction.
			e := mixedFracEnd(t, k)
			if e <= k {
				break scan
			}
			j = e
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

// mixedFracEnd returns the end of the fraction n/d of integers at t[k] in
// a mixed number ("1/2" of "1 1/2"), or k.
func mixedFracEnd(t string, k int) int {
	e := k
	for e < len(t) && isDigit(t[e]) {
		e++
	}
	if e+1 >= len(t) || t[e] != '/' || !isDigit(t[e+1]) {
		return k
	}
	e++
	for e < len(t) && isDigit(t[e]) {
		e++
	}
	if e < len(t) && (t[e] == '.' && e+1 < len(t) && isDigit(t[e+1]) || t[e] == '^') {
		return k
	}
	return e
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
	// A run is at most maxRunLen bytes: looking no further keeps the scan
	// of nested fractions linear.
	t = t[:min(len(t), i+maxRunLen)]
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
