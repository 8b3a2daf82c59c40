package mathverify

import "strings"

// Multiple-choice answers in the AMC style, "\textbf{(C)}\ 24": a letter
// in parentheses, then (optionally) the option's value. Either side may be
// written this way; the other side then matches by letter ("C", "(C)")
// or by value ("24").

// amcForm splits s into the option letter and the value after it:
// "\textbf{(C)}\ 24" → 'C', "24"; "(C)" → 'C', "". ok is false for
// anything else.
func amcForm(s string) (letter byte, value string, ok bool) {
	s = strings.Trim(strings.TrimSpace(s), "$ ")
	for _, w := range [...]string{`\textbf{`, `\text{`, `\mathrm{`, `\mathbf{`} {
		if strings.HasPrefix(s, w) {
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return 0, "", false
			}
			s = s[len(w):end] + " " + s[end+1:]
			break
		}
	}
	s = strings.TrimSpace(s)
	if len(s) < 3 || s[0] != '(' || s[2] != ')' || s[1] < 'A' || s[1] > 'Z' {
		return 0, "", false
	}
	rest := strings.TrimSpace(amcNoise.Replace(s[3:]))
	return s[1], rest, true
}

var amcNoise = strings.NewReplacer(`\ `, " ", "~", " ", `\quad`, " ", `\qquad`, " ", `\,`, " ", `\;`, " ")

// bareLetter reports a lone option letter: "C", "(C)", "\text{C}".
func bareLetter(s string) (byte, bool) {
	s = strings.Trim(strings.TrimSpace(s), "$ ")
	for _, w := range [...]string{`\textbf{`, `\text{`, `\mathrm{`, `\mathbf{`} {
		if strings.HasPrefix(s, w) && strings.HasSuffix(s, "}") {
			s = strings.TrimSpace(s[len(w) : len(s)-1])
		}
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "("), ")")
	if len(s) == 1 && s[0] >= 'A' && s[0] <= 'Z' {
		return s[0], true
	}
	return 0, false
}

// amcEqual compares gold and pred texts when either is in AMC form; done
// is false when neither is, and the ordinary comparison decides.
func (c *comparer) amcEqual(gold, pred string) (equal, done bool) {
	gl, gv, gAMC := amcForm(gold)
	pl, pv, pAMC := amcForm(pred)
	if !gAMC && !pAMC {
		return false, false
	}
	switch {
	case gAMC && pAMC:
		if gl != pl {
			return false, true
		}
		return pv == "" || gv == "" || c.textsEqual(gv, pv), true
	case gAMC:
		if l, ok := bareLetter(pred); ok {
			return l == gl, true
		}
		return gv != "" && c.textsEqual(gv, pred), true
	default:
		if l, ok := bareLetter(gold); ok {
			return l == pl, true
		}
		return pv != "" && c.textsEqual(gold, pv), true
	}
}

// textsEqual parses two answer texts and compares them.
func (c *comparer) textsEqual(g, p string) bool {
	gn, err1 := parseAnswer(g, false, c.o.MaxDepth, c.bud)
	pn, err2 := parseAnswer(p, false, c.o.MaxDepth, c.bud)
	if err1 != nil || err2 != nil {
		return strings.Join(strings.Fields(g), " ") == strings.Join(strings.Fields(p), " ")
	}
	return c.equal(gn, pn)
}
