package mathverify

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// errParse is wrapped by every syntax error; extraction treats it as "this
// candidate is not an answer" and tries the next one.
var errParse = errors.New("syntax error")

// Commands the parser gives a meaning (besides those the lexer rewrites).
var parserCmds = setOf("frac", "sqrt", "binom", "boxed", "pi", "infty", "infinity", "emptyset", "dots",
	"pm", "mp", "sum", "prod", "lfloor", "rfloor", "lceil", "rceil", "overline", "bm", "boldsymbol",
	"exp", "ln", "log", "lg", "max", "min", "gcd", "lcm", "det", "choose", "abs", "sgn", "operatorname",
	"sin", "cos", "tan", "sec", "csc", "cot", "arcsin", "arccos", "arctan", "arcsec", "arccsc", "arccot",
	"sinh", "cosh", "tanh", "coth", "sech", "csch", "alpha", "beta", "gamma", "delta", "epsilon",
	"varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi",
	"rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta",
	"Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega", "angle", "triangle", "circ")

// funcArity: the known functions (LaTeX commands and plain words).
var funcNames = setOf("sin", "cos", "tan", "sec", "csc", "cot", "arcsin", "arccos", "arctan", "arcsec",
	"arccsc", "arccot", "sinh", "cosh", "tanh", "coth", "sech", "csch", "exp", "ln", "log", "lg",
	"max", "min", "gcd", "lcm", "abs", "sqrt", "floor", "ceil", "sgn", "det", "asin", "acos", "atan")

// trigInverse maps f to f⁻¹ for \sin^{-1}.
var trigInverse = map[string]string{"sin": "arcsin", "cos": "arccos", "tan": "arctan",
	"sec": "arcsec", "csc": "arccsc", "cot": "arccot"}

var greek = setOf("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
	"vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi",
	"varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi",
	"Psi", "Omega")

// unitWords are units and counting nouns that may follow a number and are
// dropped: "15 cm^2", "125 miles", "6 ways".
var unitWords = setOf("cm", "mm", "km", "kg", "mg", "ml", "cm2", "m2", "meter", "meters",
	"metre", "metres", "centimeter", "centimeters", "millimeters", "kilometers", "mile", "miles",
	"feet", "foot", "ft", "inch", "inches", "yard", "yards", "hour", "hours", "hr", "hrs",
	"minute", "minutes", "mins", "min", "second", "seconds", "sec", "day", "days", "week", "weeks",
	"month", "months", "year", "years", "degree", "degrees", "deg", "radian", "radians", "rad",
	"unit", "units", "dollar", "dollars", "cent", "cents", "yuan", "euro", "euros", "pound", "pounds",
	"sq", "square", "cubic", "liter", "liters", "litre", "litres", "gram", "grams", "kilogram",
	"kilograms", "mph", "kmh", "ways", "way", "people", "persons", "students", "times", "points",
	"sqft", "km2", "mm2", "cm3", "m3")

var percentWords = setOf("percent", "percentage", "pct")

// parser is a recursive-descent parser over the tokens of one answer.
type parser struct {
	toks     []token
	pos      int
	depth    int
	maxDepth int
	inMatrix int
	inAbs    int
	plain    bool
	bound    []string // summation indices in scope
	bud      *budget
}

func (p *parser) fail(format string, a ...any) error {
	pos := 0
	if p.pos < len(p.toks) {
		pos = p.toks[p.pos].pos
	}
	return fmt.Errorf("%w at %d: %s", errParse, pos, fmt.Sprintf(format, a...))
}

// parseAnswer parses one extracted answer. plain is set for text found
// outside LaTeX.
func parseAnswer(s string, plain bool, maxDepth int, bud *budget) (*node, error) {
	toks := lex(s, plain)
	toks = chooseSide(toks)
	p := &parser{toks: toks, maxDepth: maxDepth, plain: plain, bud: bud}
	n, err := p.parseTop()
	if err != nil {
		return nil, err
	}
	for p.isOp(".") || p.isOp(",") || p.isOp(";") {
		p.pos++
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.fail("unexpected %q", t.text)
	}
	return n, nil
}

// chooseSide resolves "a ⇒ b" to b, and "x = 1/3 ≈ 0.33" to its exact
// part: the side before ≈ when it holds an equation, else the side after.
func chooseSide(toks []token) []token {
	cut := func(op string, keepLeft func([]token) bool) []token {
		first, last := -1, -1
		for i, t := range toks {
			if t.kind == tOp && t.text == op {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first < 0 {
			return toks
		}
		if keepLeft(toks[:first]) {
			out := append(toks[:first:first], token{kind: tEOF, pos: toks[first].pos})
			return out
		}
		return toks[last+1:]
	}
	toks = cut("=>", func([]token) bool { return false })
	return cut("~~", func(left []token) bool {
		for _, t := range left {
			if t.kind == tOp && t.text == "=" {
				return true
			}
		}
		return false
	})
}

// peek returns the current token, stepping over tokens that carry nothing
// here: alignment marks outside matrices, empty \text{}, a stray full stop.
func (p *parser) peek() token {
	for {
		t := p.toks[p.pos]
		switch {
		case t.kind == tOp && (t.text == "&" || t.text == `\\`) && p.inMatrix == 0:
			p.pos++
			continue
		case t.kind == tText && strings.TrimSpace(t.text) == "" && textLike(t.aux):
			p.pos++
			continue
		case t.kind == tOp && t.text == "." && p.pos+1 < len(p.toks):
			nx := p.toks[p.pos+1]
			if nx.kind == tEOF || isOpOf(nx, ")", "]", "}", `\}`, ",", ";") {
				p.pos++
				continue
			}
		}
		return t
	}
}

// isOpOf reports whether t is one of the operators ops.
func isOpOf(t token, ops ...string) bool {
	return t.kind == tOp && slices.Contains(ops, t.text)
}

func (p *parser) peekAt(k int) token {
	p.peek()
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) advance() token {
	t := p.peek()
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == op
}

func (p *parser) isCmd(name string) bool {
	t := p.peek()
	return t.kind == tCmd && t.text == name
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.fail("want %q", op)
	}
	p.pos++
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.fail("nesting deeper than %d", p.maxDepth)
	}
	if !p.bud.ok() {
		return p.bud.err
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func textLike(aux string) bool {
	switch aux {
	case "text", "textbf", "textit", "textrm", "textsf", "texttt", "textnormal", "textup", "mbox", "hbox", "emph", "textsc":
		return true
	}
	return false
}

// separator reports whether the current token separates list items, and
// which kind: "," or ";".
func (p *parser) separator() (string, bool) {
	t := p.peek()
	switch t.kind {
	case tOp:
		if t.text == "," || t.text == ";" {
			return t.text, true
		}
	case tWord:
		if w := strings.ToLower(t.text); w == "and" || w == "or" {
			return ",", true
		}
	case tText:
		if textLike(t.aux) || t.aux == "mathrm" {
			w := strings.ToLower(strings.Trim(t.text, " ,;.\t\n"))
			if w == "and" || w == "or" || w == "and/or" || w == "or/and" {
				return ",", true
			}
		}
	}
	return "", false
}

// atItemEnd reports whether the current token closes a list.
func (p *parser) atItemEnd() bool {
	t := p.peek()
	switch t.kind {
	case tEOF:
		return true
	case tOp:
		switch t.text {
		case ")", "]", "}", `\}`, "&", `\\`:
			return true
		}
	case tCmd:
		return t.text == "end"
	}
	return false
}

// parseItems parses a list of relations separated by commas, semicolons or
// the words "and"/"or". seps[i] separates items[i] and items[i+1].
func (p *parser) parseItems() (items []*node, seps []string, err error) {
	for {
		for {
			if _, ok := p.separator(); !ok {
				break
			}
			p.pos++ // leading or doubled separators, as in "19, 46, and 82"
		}
		if p.atItemEnd() {
			if len(items) == 0 {
				return nil, nil, p.fail("empty list")
			}
			if len(seps) == len(items) {
				seps = seps[:len(seps)-1] // a trailing comma
			}
			return items, seps, nil
		}
		if len(items) > 0 && len(seps) < len(items) {
			return nil, nil, p.fail("unexpected %q", p.peek().text)
		}
		it, err := p.parseRel()
		if err != nil {
			return nil, nil, err
		}
		items = append(items, it)
		if s, ok := p.separator(); ok {
			seps = append(seps, s)
			p.pos++
		} else if !p.atItemEnd() {
			return nil, nil, p.fail("unexpected %q", p.peek().text)
		}
	}
}

// buildList turns a top-level list into a set, applying the conventions of
// written answers: "n = 1, 2, 3" means n ∈ {1, 2, 3}; "p=5,q=2; p=7,q=2"
// is a set of pairs.
func buildList(items []*node, seps []string) *node {
	if len(items) == 1 {
		return items[0]
	}
	semi, comma := false, false
	for _, s := range seps {
		semi = semi || s == ";"
		comma = comma || s == ","
	}
	if semi && comma {
		var groups []*node
		cur := []*node{items[0]}
		flush := func() {
			if len(cur) == 1 {
				groups = append(groups, cur[0])
			} else {
				groups = append(groups, &node{k: kTuple, args: cur})
			}
		}
		for i, s := range seps {
			if s == ";" {
				flush()
				cur = nil
			}
			cur = append(cur, items[i+1])
		}
		flush()
		return &node{k: kSet, args: groups}
	}
	if first := items[0]; first.k == kRel && len(first.ops) == 1 && (first.ops[0] == opEq || first.ops[0] == opIn) {
		rest := true
		for _, it := range items[1:] {
			rest = rest && it.k != kRel
		}
		if rest {
			vals := append([]*node{first.args[1]}, items[1:]...)
			return &node{k: kRel, ops: []relOp{first.ops[0]}, args: []*node{first.args[0], {k: kSet, args: vals}}}
		}
	}
	return &node{k: kSet, args: items}
}

func (p *parser) parseTop() (*node, error) {
	items, seps, err := p.parseItems()
	if err != nil {
		return nil, err
	}
	return buildList(items, seps), nil
}

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

func (p *parser) parseAdd() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	a, err := p.parseTerm()
	if err != nil {
		return nil, err
	}
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
			a = bin(kAdd, a, b)
		case t.kind == tCmd && (t.text == "pm" || t.text == "mp"):
			p.pos++
			b, err := p.parseTerm()
			if err != nil {
				return nil, err
			}
			a = &node{k: kPM, name: t.text, args: []*node{a, b}}
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
				a = bin(kMul, a, b)
			case "/":
				a = bin(kDiv, a, b)
			default:
				a = &node{k: kDiv, name: "ratio", args: []*node{a, b}}
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
		case p.startsImplicit(t):
			b, err := p.parsePower()
			if err != nil {
				return nil, err
			}
			if m := mixedNumber(a, b, t); m != nil {
				a = m
				continue
			}
			a = bin(kMul, a, b)
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
	case t.kind == tText && t.aux == "mathrm" && unitWords[strings.ToLower(strings.Trim(t.text, " ~\\,;!"))]:
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

func (p *parser) parsePrimary() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNum:
		p.pos++
		n := &node{k: kNum, rat: t.rat, approx: t.approx, name: t.text}
		if p.isOp("_") {
			return p.parseBase(t)
		}
		return n, nil
	case tWord:
		return p.parseWord()
	case tCmd:
		return p.parseCommand()
	case tText:
		p.pos++
		return p.parseText(t)
	case tOp:
		switch t.text {
		case "(", "[":
			return p.parseBracket()
		case "{":
			if nx := p.peekAt(1); nx.kind == tOp && nx.text == "}" {
				p.pos += 2
				return &node{k: kSet}, nil
			}
			return p.parseGroup()
		case `\{`:
			p.pos++
			if p.isOp(`\}`) {
				p.pos++
				return &node{k: kSet}, nil
			}
			items, seps, err := p.parseItems()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(`\}`); err != nil {
				return nil, err
			}
			if len(items) == 1 {
				return &node{k: kSet, args: items}, nil
			}
			s := buildList(items, seps)
			if s.k != kSet {
				s = &node{k: kSet, args: items}
			}
			return s, nil
		case "|":
			p.pos++
			p.inAbs++
			x, err := p.parseAdd()
			p.inAbs--
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("|"); err != nil {
				return nil, err
			}
			return fn("abs", x), nil
		}
	}
	return nil, p.fail("unexpected %q", t.text)
}

// parseBase reads the base of 204_5 or 13_{10}.
func (p *parser) parseBase(t token) (*node, error) {
	p.pos++ // _
	b := p.peek()
	braced := false
	if b.kind == tOp && b.text == "{" {
		braced = true
		p.pos++
		b = p.peek()
	}
	if b.kind != tNum || !b.rat.IsInt() || strings.ContainsAny(b.text, ".e(") {
		return nil, p.fail("bad base")
	}
	p.pos++
	if braced {
		if err := p.expectOp("}"); err != nil {
			return nil, err
		}
	}
	base := b.rat.Num()
	if !base.IsInt64() || base.Int64() < 2 || base.Int64() > 36 || !allDigits(t.text) || len(t.text) > 1000 {
		return nil, p.fail("bad base")
	}
	v, ok := new(big.Int).SetString(t.text, int(base.Int64()))
	if !ok {
		return nil, p.fail("%s is not a base-%d number", t.text, base.Int64())
	}
	return &node{k: kBase, name: t.text, rat: new(big.Rat).SetInt(v), cols: int(base.Int64())}, nil
}

func (p *parser) parseWord() (*node, error) {
	t := p.advance()
	w := t.text
	lw := strings.ToLower(w)
	switch {
	case lw == "and" || lw == "or":
		return nil, p.fail("unexpected %q", w)
	case funcNames[lw] && p.isOp("("):
		return p.parseFunction(lw)
	case lw == "pi":
		return cnst("pi"), nil
	case lw == "infty" || lw == "infinity" || lw == "inf":
		return cnst("inf"), nil
	}
	// A run of letters is a product of one-letter variables; the last
	// one takes a subscript, a prime or, for f, g, h, an argument list.
	var out *node
	for len(w) > 0 {
		r, size := utf8.DecodeRuneInString(w)
		l := string(r)
		w = w[size:]
		var x *node
		if w == "" {
			var err error
			if x, err = p.letterSuffix(l); err != nil {
				return nil, err
			}
		} else {
			x = p.letter(l)
		}
		if out == nil {
			out = x
		} else {
			out = bin(kMul, out, x)
		}
	}
	return out, nil
}

// letterSuffix builds the last letter of a word with what follows it:
// x_1, a_{n-1}, f(x), f'(x).
func (p *parser) letterSuffix(l string) (*node, error) {
	name := l
	for p.isOp("'") {
		p.pos++
		name += "'"
	}
	if p.isOp("_") {
		p.pos++
		sub, err := p.parseSubArg()
		if err != nil {
			return nil, err
		}
		return &node{k: kUFunc, name: name + "_", args: []*node{sub}}, nil
	}
	if len(l) == 1 && strings.Contains("fghFGH", l) && p.isOp("(") {
		args, err := p.parseParenArgs()
		if err != nil {
			return nil, err
		}
		return &node{k: kUFunc, name: name, args: args}, nil
	}
	if name != l {
		return sym(name), nil
	}
	return p.letter(l), nil
}

// parseSubArg reads a subscript; letters in it are plain symbols.
func (p *parser) parseSubArg() (*node, error) {
	p.bound = append(p.bound, "e", "i")
	defer func() { p.bound = p.bound[:len(p.bound)-2] }()
	t := p.peek()
	if t.kind == tNum {
		p.pos++
		return &node{k: kNum, rat: t.rat, approx: t.approx, name: t.text}, nil
	}
	return p.parseSupArg()
}

func (p *parser) parseParenArgs() ([]*node, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	items, _, err := p.parseItems()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return items, nil
}

func (p *parser) parseBracket() (*node, error) {
	open := p.advance().text
	items, seps, err := p.parseItems()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tOp || t.text != ")" && t.text != "]" {
		return nil, p.fail("unclosed %q", open)
	}
	p.pos++
	closeParen := t.text == ")"
	switch {
	case len(items) == 1:
		if (open == "(") != closeParen {
			return nil, p.fail("mismatched brackets")
		}
		return items[0], nil
	case len(items) == 2 && open == "(" && closeParen:
		return &node{k: kTuple, args: items, pair: true}, nil
	case len(items) == 2 && !strings.Contains(strings.Join(seps, ""), ";"):
		return &node{k: kInterval, args: items, lopen: open == "(", ropen: closeParen}, nil
	}
	return &node{k: kTuple, args: items}, nil
}

func (p *parser) parseText(t token) (*node, error) {
	content := strings.TrimSpace(t.text)
	switch t.aux {
	case "mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathcal", "mathfrak":
		switch content {
		case "e":
			return cnst("e"), nil
		case "i":
			return cnst("i"), nil
		}
	case "mathbb":
		if content == "R" {
			return &node{k: kInterval, args: []*node{neg(cnst("inf")), cnst("inf")}, lopen: true, ropen: true}, nil
		}
		return &node{k: kText, name: content}, nil
	case "operatorname":
		lc := strings.ToLower(content)
		if funcNames[lc] {
			return p.parseFunction(lc)
		}
		if p.isOp("(") {
			args, err := p.parseParenArgs()
			if err != nil {
				return nil, err
			}
			return &node{k: kUFunc, name: content, args: args}, nil
		}
		return &node{k: kText, name: content}, nil
	}
	if content == "" {
		return nil, p.fail("empty text")
	}
	// \text{13} is the number 13, \text{(C)} is the choice C; words stay
	// text and are compared as text.
	if len(content) <= 200 && p.depth+2 < p.maxDepth {
		if n, err := parseAnswer(content, false, p.maxDepth-p.depth, p.bud); err == nil {
			if !t.isWordy() || !textLike(t.aux) {
				return n, nil
			}
		}
	}
	return &node{k: kText, name: content}, nil
}

// isWordy reports whether a \text{} content has letters, so it is a word
// and not a number or a formula.
func (t token) isWordy() bool {
	for i := 0; i < len(t.text); i++ {
		if isLetter(t.text[i]) {
			return true
		}
	}
	return false
}

func (p *parser) parseCommand() (*node, error) {
	t := p.advance()
	name := t.text
	switch {
	case name == "frac" || name == "binom":
		a, err := p.parseMacroArg()
		if err != nil {
			return nil, err
		}
		b, err := p.parseMacroArg()
		if err != nil {
			return nil, err
		}
		if name == "binom" {
			return fn("binom", a, b), nil
		}
		return bin(kDiv, a, b), nil
	case name == "sqrt":
		var idx *node
		if p.isOp("[") {
			p.pos++
			var err error
			if idx, err = p.parseAdd(); err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
		}
		a, err := p.parseMacroArg()
		if err != nil {
			return nil, err
		}
		if idx != nil {
			return fn("root", a, idx), nil
		}
		return fn("sqrt", a), nil
	case name == "boxed" || name == "bm" || name == "boldsymbol":
		if p.isOp("{") {
			return p.parseGroup()
		}
		return p.parsePrimary()
	case name == "pi":
		return cnst("pi"), nil
	case name == "infty" || name == "infinity":
		return cnst("inf"), nil
	case name == "emptyset":
		return &node{k: kSet}, nil
	case greek[name]:
		return sym(name), nil
	case funcNames[name]:
		return p.parseFunction(name)
	case name == "sum" || name == "prod":
		return p.parseBigOp(name)
	case name == "lfloor" || name == "lceil":
		x, err := p.parseAdd()
		if err != nil {
			return nil, err
		}
		closer := "rfloor"
		f := "floor"
		if name == "lceil" {
			closer, f = "rceil", "ceil"
		}
		if !p.isCmd(closer) {
			return nil, p.fail("want \\%s", closer)
		}
		p.pos++
		return fn(f, x), nil
	case name == "begin":
		switch t.aux {
		case "pmatrix", "bmatrix", "matrix", "vmatrix", "Bmatrix", "Vmatrix", "smallmatrix", "array":
			return p.parseMatrix()
		}
		return nil, p.fail("environment %s", t.aux)
	case name == "dots", name == "end", name == "overline", name == "pm", name == "mp", name == "rfloor", name == "rceil", name == "choose":
		return nil, p.fail("unexpected \\%s", name)
	}
	// An unknown command is a named symbol, as \zzz in "1 = \zzz = x".
	return sym(`\` + name), nil
}

// parseFunction reads the argument of sin, log, …: \sin^2 x, \log_2(8),
// \sin^{-1} x, max(a, b).
func (p *parser) parseFunction(name string) (*node, error) {
	var pw, base *node
	for i := 0; i < 2; i++ {
		if p.isOp("^") && pw == nil {
			p.pos++
			var err error
			if pw, err = p.parseSupArg(); err != nil {
				return nil, err
			}
		}
		if p.isOp("_") && base == nil {
			p.pos++
			var err error
			if base, err = p.parseSubArg(); err != nil {
				return nil, err
			}
		}
	}
	if pw != nil && pw.k == kNeg && pw.args[0].k == kNum && pw.args[0].rat.Cmp(big.NewRat(1, 1)) == 0 {
		if inv, ok := trigInverse[name]; ok {
			name, pw = inv, nil
		}
	}
	switch name {
	case "asin", "acos", "atan":
		name = "arc" + name[1:]
	case "lg":
		name, base = "log", intNode(10)
	}
	var args []*node
	if p.isOp("(") {
		var err error
		if args, err = p.parseParenArgs(); err != nil {
			return nil, err
		}
	} else {
		a, err := p.parseFuncArg()
		if err != nil {
			return nil, err
		}
		args = []*node{a}
	}
	if base != nil {
		if name != "log" || len(args) != 1 {
			return nil, p.fail("subscript on %s", name)
		}
		args = append(args, base)
	}
	f := fn(name, args...)
	if pw != nil {
		f = &node{k: kPow, args: []*node{f, pw}}
	}
	return f, nil
}

// parseFuncArg reads the argument of a function written without
// parentheses: \sin 2x is sin(2x); \sin b \cos a stops before \cos.
func (p *parser) parseFuncArg() (*node, error) {
	a, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind == tCmd && (funcNames[t.text] || t.text == "sum" || t.text == "prod") || t.kind == tOp && t.text == "(" {
			return a, nil
		}
		if p.skipUnit() || !p.startsImplicit(t) {
			return a, nil
		}
		b, err := p.parsePower()
		if err != nil {
			return nil, err
		}
		a = bin(kMul, a, b)
	}
}

// parseBigOp reads \sum_{k=a}^{b} body and \prod likewise.
func (p *parser) parseBigOp(name string) (*node, error) {
	if err := p.expectOp("_"); err != nil {
		return nil, err
	}
	if err := p.expectOp("{"); err != nil {
		return nil, err
	}
	v := p.peek()
	if v.kind != tWord || utf8.RuneCountInString(v.text) != 1 {
		return nil, p.fail("summation index")
	}
	p.pos++
	if err := p.expectOp("="); err != nil {
		return nil, err
	}
	lo, err := p.parseAdd()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp("}"); err != nil {
		return nil, err
	}
	if err := p.expectOp("^"); err != nil {
		return nil, err
	}
	hi, err := p.parseSupArg()
	if err != nil {
		return nil, err
	}
	p.bound = append(p.bound, v.text)
	body, err := p.parseTerm()
	p.bound = p.bound[:len(p.bound)-1]
	if err != nil {
		return nil, err
	}
	k := kSum
	if name == "prod" {
		k = kProd
	}
	return &node{k: k, name: v.text, args: []*node{lo, hi, body}}, nil
}

// parseMatrix reads the cells of a matrix environment up to \end.
func (p *parser) parseMatrix() (*node, error) {
	p.inMatrix++
	defer func() { p.inMatrix-- }()
	var rows [][]*node
	var row []*node
	for {
		t := p.peek()
		if t.kind == tCmd && t.text == "end" {
			p.pos++
			if len(row) > 0 {
				rows = append(rows, row)
			}
			break
		}
		if t.kind == tEOF {
			return nil, p.fail("unclosed matrix")
		}
		cell, err := p.parseRel()
		if err != nil {
			return nil, err
		}
		row = append(row, cell)
		t = p.peek()
		switch {
		case t.kind == tOp && t.text == "&":
			p.pos++
		case t.kind == tOp && t.text == `\\`:
			p.pos++
			rows = append(rows, row)
			row = nil
		case t.kind == tCmd && t.text == "end":
		default:
			return nil, p.fail("unexpected %q in matrix", t.text)
		}
	}
	if len(rows) == 0 {
		return nil, p.fail("empty matrix")
	}
	cols := len(rows[0])
	args := make([]*node, 0, len(rows)*cols)
	for _, r := range rows {
		if len(r) != cols {
			return nil, p.fail("ragged matrix")
		}
		args = append(args, r...)
	}
	return &node{k: kMatrix, args: args, cols: cols}, nil
}
