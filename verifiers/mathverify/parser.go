package mathverify

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
