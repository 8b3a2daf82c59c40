package mathverify

import (
	"math/big"
	"strings"
	"unicode/utf8"
)

// Primaries: numbers, names, commands, functions, brackets, text, big
// operators and matrices.

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
			if p.setBuilder() {
				return p.parseSetBuilder()
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

// setBuilder reports set-builder notation at the parser's position, just
// after \{: a one-letter name, then ":", "|" or \mid.
func (p *parser) setBuilder() bool {
	t, sep := p.peek(), p.peekAt(1)
	if t.kind != tWord || len(t.text) != 1 || !isLetter(t.text[0]) {
		return false
	}
	return sep.kind == tOp && (sep.text == ":" || sep.text == "|") || sep.kind == tCmd && sep.text == "mid"
}

// parseSetBuilder reads {x : condition} as the condition, which answers an
// interval or a set as the set it defines ({x : |x| > 1} is
// (−∞, −1) ∪ (1, ∞)).
func (p *parser) parseSetBuilder() (*node, error) {
	p.pos += 2
	items, seps, err := p.parseItems()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(`\}`); err != nil {
		return nil, err
	}
	cond := buildList(items, seps)
	if cond.k != kRel && cond.k != kSet {
		return nil, p.fail("set-builder notation without a condition")
	}
	return cond, nil
}
