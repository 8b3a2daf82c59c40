package mathverify

import (
	"math/big"
	"strings"
	"unicode/utf8"
)

// Operators, loosest binding first: relations, set operations, sums, terms
// (with implicit products, mixed numbers and units), signs, powers and
// postfix marks.

var relOps = map[string]relOp{"=": opEq, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe, "!=": opNe, "in": opIn}

func (p *parser) parseRel() (*node, error) {
	a, err := p.parseSetExpr()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tOp {
		return a, nil
	}
	if _, ok := relOps[t.text]; !ok {
		return a, nil
	}
	rel := &node{k: kRel, args: []*node{a}}
	for {
		t := p.peek()
		op, ok := relOps[t.text]
		if t.kind != tOp || !ok {
			break
		}
		p.pos++
		b, err := p.parseSetExpr()
		if err != nil {
			return nil, err
		}
		rel.ops = append(rel.ops, op)
		rel.args = append(rel.args, b)
	}
	return rel, nil
}

func (p *parser) parseSetExpr() (*node, error) {
	a, err := p.parseAdd()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		var k kind
		switch {
		case t.kind == tOp && t.text == "cup":
			k = kUnion
		case t.kind == tOp && t.text == "cap":
			k = kInter
		case t.kind == tOp && t.text == "setminus":
			k = kSetMinus
		default:
			return a, nil
		}
		p.pos++
		b, err := p.parseAdd()
		if err != nil {
			return nil, err
		}
		if a.k == k && k != kSetMinus {
			a = &node{k: k, args: append(a.args, b)}
		} else {
			a = &node{k: k, args: []*node{a, b}}
		}
	}
}

// grow returns bin(k, a, b), appending b to a's operands in place when
// owned says that a is a k node that the caller's loop built and nobody
// else holds: a sum of n terms is then built in O(n), not O(n²).
func grow(k kind, a, b *node, owned bool) *node {
	if !owned || a.k != k {
		return bin(k, a, b)
	}
	if b.k == k {
		a.args = append(a.args, b.args...)
	} else {
		a.args = append(a.args, b)
	}
	return a
}

func (p *parser) parseAdd() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	a, err := p.parseTerm()
	if err != nil {
		return nil, err
	}
	owned := false // a is a sum built by this loop, referenced nowhere else
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && (t.text == "+" || t.text == "-"):
			p.pos++
			b, err := p.parseTerm()
			if err != nil {
				return nil, err
			}
			if t.text == "-" {
				b = neg(b)
			}
			a, owned = grow(kAdd, a, b, owned), true
		case t.kind == tCmd && (t.text == "pm" || t.text == "mp"):
			p.pos++
			b, err := p.parseTerm()
			if err != nil {
				return nil, err
			}
			a, owned = &node{k: kPM, name: t.text, args: []*node{a, b}}, false
		default:
			return a, nil
		}
	}
}

func (p *parser) parseTerm() (*node, error) {
	a, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	owned := false // a is a product built by this loop, referenced nowhere else
	for {
		if !p.bud.ok() {
			return nil, p.bud.err
		}
		t := p.peek()
		switch {
		case t.kind == tOp && (t.text == "*" || t.text == "/" || t.text == ":"):
			if t.text == ":" && !p.startsValue(p.peekAt(1)) {
				return a, nil
			}
			p.pos++
			b, err := p.parseUnary()
			if err != nil {
				return nil, err
			}
			switch t.text {
			case "*":
				a, owned = grow(kMul, a, b, owned), true
			case "/":
				a, owned = bin(kDiv, a, b), false
			default:
				a, owned = &node{k: kDiv, name: "ratio", args: []*node{a, b}}, false
			}
		case p.skipUnit():
			// a unit after a value carries no value
		case p.spacedMixed(a, t):
			// 1 1/2 is one and a half (see spacedMixed)
			frac := bin(kDiv, &node{k: kNum, rat: p.toks[p.pos].rat}, &node{k: kNum, rat: p.toks[p.pos+2].rat})
			p.pos += 3
			if a.k == kNeg {
				a = neg(bin(kAdd, a.args[0], frac))
			} else {
				a = bin(kAdd, a, frac)
			}
			owned = false
		case p.startsImplicit(t):
			b, err := p.parsePower()
			if err != nil {
				return nil, err
			}
			if m := mixedNumber(a, b, t); m != nil {
				a, owned = m, false
				continue
			}
			a, owned = grow(kMul, a, b, owned), true
		default:
			return a, nil
		}
	}
}

// spacedMixed reports a mixed number written with a space, "1 1/2" or
// "-2 3/4": an integer a, then after white space an integer fraction n/d
// with 0 < n < d that nothing binds more tightly (no ^ after d). Without
// the space, "11/2" is eleven halves.
func (p *parser) spacedMixed(a *node, t token) bool {
	whole := a
	if whole.k == kNeg {
		whole = whole.args[0]
	}
	if whole.k != kNum || whole.approx || !whole.rat.IsInt() || t.kind != tNum || t.approx || t.rat == nil || !t.rat.IsInt() {
		return false
	}
	if p.pos == 0 || p.toks[p.pos-1].kind != tNum || p.toks[p.pos-1].pos+len(p.toks[p.pos-1].text) >= t.pos {
		return false
	}
	slash, den, after := p.peekAt(1), p.peekAt(2), p.peekAt(3)
	if !(slash.kind == tOp && slash.text == "/") || den.kind != tNum || den.approx || den.rat == nil || !den.rat.IsInt() || after.kind == tOp && after.text == "^" {
		return false
	}
	return t.rat.Sign() > 0 && t.rat.Cmp(den.rat) < 0
}

// mixedNumber reads 2\frac{1}{2} as 2½ = 5/2, the way it is written in
// answers, when an integer is followed directly by a fraction of integers.
func mixedNumber(a, b *node, t token) *node {
	whole, sign := a, false
	if whole.k == kNeg {
		whole, sign = whole.args[0], true
	}
	if t.kind != tCmd || t.text != "frac" || whole.k != kNum || whole.approx || !whole.rat.IsInt() || b.k != kDiv {
		return nil
	}
	for _, x := range b.args {
		if x.k != kNum || x.approx || !x.rat.IsInt() || x.rat.Sign() <= 0 {
			return nil
		}
	}
	m := bin(kAdd, whole, b)
	if sign {
		return neg(m)
	}
	return m
}

// skipUnit steps over a unit after a value: \text{ cm}^2, \mbox{miles},
// "cm", "dollars". It reports whether it did.
func (p *parser) skipUnit() bool {
	t := p.peek()
	switch {
	case t.kind == tText && textLike(t.aux):
		if _, sep := p.separator(); sep {
			return false
		}
	case t.kind == tText && t.aux == "mathrm" && unitText(t.text):
	case t.kind == tWord && unitWords[strings.ToLower(t.text)] && len(p.bound) == 0:
		// A unit word must end the value: "5 min" is a unit, "min(a, b)"
		// and "5 m x" are not.
		nx := p.peekAt(1)
		if nx.kind == tOp && nx.text == "^" {
			nx = p.peekAt(3)
		}
		if !(nx.kind == tEOF || isOpOf(nx, ",", ";", ")", "]", "}", `\}`, "/", "=", "<", ">", "<=", ">=", "!=") ||
			nx.kind == tWord && (unitWords[strings.ToLower(nx.text)] || strings.EqualFold(nx.text, "and") || strings.EqualFold(nx.text, "or"))) {
			return false
		}
	default:
		return false
	}
	p.pos++
	// a power of the unit: cm^2, \text{m}^{3}
	if p.isOp("^") {
		nx := p.peekAt(1)
		switch {
		case nx.kind == tNum:
			p.pos += 2
		case nx.kind == tOp && nx.text == "{" && p.peekAt(2).kind == tNum && p.peekAt(3).kind == tOp && p.peekAt(3).text == "}":
			p.pos += 4
		}
	}
	return true
}

// unitText reports the content of \mathrm{…} after a value that is a
// unit: unit words and unit letters, joined by /, ^, spaces or \cdot
// ("~cm", "m/s", "kg\cdot m^2"). One letter alone must be a unit letter
// other than e and i, which are constants.
func unitText(s string) bool {
	s = strings.Trim(s, " ~\\,;!")
	if s == "" {
		return false
	}
	words := strings.FieldsFunc(s, func(r rune) bool {
		return r == '/' || r == '^' || r == ' ' || r == '~' || r == '{' || r == '}' || r == '.' || r == '\\' || r >= '0' && r <= '9'
	})
	if len(words) == 0 {
		return false
	}
	for _, w := range words {
		if w == "cdot" {
			continue
		}
		if !unitWords[strings.ToLower(w)] && !(len(w) == 1 && strings.Contains("msgkhlLNJWVAKC", w)) {
			return false
		}
	}
	return true
}

// startsValue reports whether t can begin an operand.
func (p *parser) startsValue(t token) bool {
	switch t.kind {
	case tNum, tWord, tText:
		return true
	case tCmd:
		return t.text != "end" && t.text != "pm" && t.text != "mp"
	case tOp:
		switch t.text {
		case "(", "[", "{", `\{`, "|", "-", "+":
			return true
		}
	}
	return false
}

// startsImplicit reports whether t begins a factor multiplied by
// juxtaposition: 2x, 3\sqrt{2}, (a+1)(b+2).
func (p *parser) startsImplicit(t token) bool {
	if _, sep := p.separator(); sep {
		return false
	}
	switch t.kind {
	case tNum, tText:
		return true
	case tWord:
		w := strings.ToLower(t.text)
		return w != "and" && w != "or" && !percentWords[w]
	case tCmd:
		switch t.text {
		case "end", "pm", "mp", "rfloor", "rceil", "dots":
			return false
		}
		return true
	case tOp:
		switch t.text {
		case "(", "{":
			return true
		case "|":
			return p.inAbs == 0
		}
	}
	return false
}

func (p *parser) parseUnary() (*node, error) {
	t := p.peek()
	switch {
	case t.kind == tOp && t.text == "-":
		p.pos++
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return neg(x), nil
	case t.kind == tOp && t.text == "+":
		p.pos++
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		return p.parseUnary()
	case t.kind == tCmd && (t.text == "pm" || t.text == "mp"):
		p.pos++
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &node{k: kPM, name: t.text, args: []*node{nil, x}}, nil
	}
	return p.parsePower()
}

func (p *parser) parsePower() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	b, err := p.parsePostfix()
	if err != nil {
		return nil, err
	}
	for p.isOp("^") {
		if p.peekAt(1).kind == tDegree {
			p.pos += 2
			b = &node{k: kDegree, args: []*node{b}}
			p.skipTemperature()
			continue
		}
		if p.peekAt(1).kind == tOp && p.peekAt(1).text == "{" && p.peekAt(2).kind == tDegree && p.peekAt(3).kind == tOp && p.peekAt(3).text == "}" {
			p.pos += 4
			b = &node{k: kDegree, args: []*node{b}}
			p.skipTemperature()
			continue
		}
		if nx := p.peekAt(1); nx.kind == tCmd && nx.text == "prime" || nx.kind == tOp && nx.text == "'" {
			p.pos += 2
			if b.k == kSym || b.k == kUFunc {
				b.name += "'"
			}
			continue
		}
		p.pos++
		e, err := p.parseSupArg()
		if err != nil {
			return nil, err
		}
		if p.isOp("^") && !(p.peekAt(1).kind == tDegree) {
			// a^b^c = a^(b^c)
			rest, err := p.parsePowerTail(e)
			if err != nil {
				return nil, err
			}
			e = rest
		}
		b = &node{k: kPow, args: []*node{b, e}}
		b, err = p.postfixOps(b)
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (p *parser) parsePowerTail(base *node) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.pos++ // ^
	e, err := p.parseSupArg()
	if err != nil {
		return nil, err
	}
	if p.isOp("^") {
		if e, err = p.parsePowerTail(e); err != nil {
			return nil, err
		}
	}
	return &node{k: kPow, args: []*node{base, e}}, nil
}

func (p *parser) parsePostfix() (*node, error) {
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	return p.postfixOps(x)
}

func (p *parser) postfixOps(x *node) (*node, error) {
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && t.text == "!":
			p.pos++
			x = &node{k: kFact, args: []*node{x}}
		case t.kind == tPercent, t.kind == tWord && percentWords[strings.ToLower(t.text)]:
			p.pos++
			x = &node{k: kPercent, args: []*node{x}}
		case t.kind == tDegree:
			p.pos++
			x = &node{k: kDegree, args: []*node{x}}
			p.skipTemperature()
		case t.kind == tOp && t.text == "'":
			p.pos++
			if x.k == kSym || x.k == kUFunc {
				x.name += "'"
			}
		default:
			return x, nil
		}
	}
}

// skipTemperature drops the scale after a degree mark: 25^\circ C, 77°F.
func (p *parser) skipTemperature() {
	t := p.peek()
	if (t.kind == tWord || t.kind == tText || t.kind == tCmd && t.text == "mathrm") && (t.text == "C" || t.text == "F" || t.text == "K") {
		p.pos++
	}
}

// splitFirst consumes the first character of the current number or word
// token, leaving the rest in place: \frac13 → 1 and 3, x^ab → x^a·b.
func (p *parser) splitFirst() (*node, error) {
	t := p.peek()
	switch t.kind {
	case tNum:
		if !isDigit(t.text[0]) {
			return nil, p.fail("bad argument %q", t.text)
		}
		first := intNode(int64(t.text[0] - '0'))
		rest := t.text[1:]
		if rest == "" {
			p.pos++
			return first, nil
		}
		lit := rest
		if lit[0] == '.' {
			lit = "0" + lit
		}
		r, ok := new(big.Rat).SetString(lit)
		if !ok {
			return nil, p.fail("bad number %q", t.text)
		}
		p.toks[p.pos] = token{kind: tNum, text: rest, pos: t.pos + 1, rat: r, approx: strings.ContainsAny(rest, ".e")}
		return first, nil
	case tWord:
		r, w := utf8.DecodeRuneInString(t.text)
		n := p.letter(string(r))
		if w == len(t.text) {
			p.pos++
		} else {
			p.toks[p.pos] = token{kind: tWord, text: t.text[w:], pos: t.pos + w}
		}
		return n, nil
	}
	return nil, p.fail("bad argument")
}

// letter makes the node of a one-letter name: e and i are the constants
// unless bound by a sum.
func (p *parser) letter(l string) *node {
	for _, b := range p.bound {
		if b == l {
			return sym(l)
		}
	}
	switch l {
	case "e":
		return cnst("e")
	case "i":
		return cnst("i")
	}
	return sym(l)
}

// parseMacroArg reads the argument of \frac, \sqrt, \binom: a {group}, or
// a single character or command as LaTeX allows (\frac13, \sqrt2).
func (p *parser) parseMacroArg() (*node, error) {
	t := p.peek()
	switch t.kind {
	case tOp:
		if t.text == "{" {
			return p.parseGroup()
		}
	case tNum, tWord:
		return p.splitFirst()
	case tCmd, tText:
		return p.parsePrimary()
	}
	return nil, p.fail("missing argument")
}

// parseGroup parses {…} as one expression.
func (p *parser) parseGroup() (*node, error) {
	if err := p.expectOp("{"); err != nil {
		return nil, err
	}
	items, seps, err := p.parseItems()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp("}"); err != nil {
		return nil, err
	}
	return buildList(items, seps), nil
}

// parseSupArg reads an exponent: {…}, a whole number (2^10 is 1024, as
// latex2sympy reads it), one letter, a command, or (…) in plain text.
func (p *parser) parseSupArg() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNum:
		p.pos++
		return &node{k: kNum, rat: t.rat, approx: t.approx, name: t.text}, nil
	case tWord:
		return p.splitFirst()
	case tCmd, tText:
		return p.parsePrimary()
	case tOp:
		switch t.text {
		case "{":
			return p.parseGroup()
		case "(", "|":
			return p.parsePrimary()
		case "-", "+":
			p.pos++
			x, err := p.parseSupArg()
			if err != nil {
				return nil, err
			}
			if t.text == "-" {
				x = neg(x)
			}
			return x, nil
		}
	}
	return nil, p.fail("missing exponent")
}
