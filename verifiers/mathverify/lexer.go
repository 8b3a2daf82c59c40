package mathverify

import (
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tNum             // a number literal; rat holds its value
	tWord            // a run of letters
	tCmd             // a LaTeX command: text = name, aux = environment for begin/end
	tText            // \text{…} and friends: text = content, aux = command
	tOp              // an operator or bracket: text
	tPercent         // % \% percent pct
	tDegree          // ^\circ ° \degree
	tBad             // a character no answer contains
)

type token struct {
	kind   tokKind
	text   string
	aux    string
	pos    int
	rat    *big.Rat
	approx bool
}

// Limits of the lexer itself: longer literals are rejected rather than
// converted, because big.Rat.SetString is superlinear in the digit count and
// in the exponent.
const (
	maxLiteralDigits = 4096
	maxLiteralExp    = 4096
)

// lexer turns one extracted answer into tokens. plain marks text that came
// from outside LaTeX, where "1,5" is a decimal comma and "1 000" a grouped
// thousand.
type lexer struct {
	s     string
	i     int
	plain bool
	depth int
	toks  []token
}

func lex(s string, plain bool) []token {
	l := lexer{s: s, plain: plain, toks: make([]token, 0, len(s)/2+2)}
	for l.i < len(l.s) {
		l.next()
	}
	l.toks = append(l.toks, token{kind: tEOF, pos: len(s)})
	return l.toks
}

func (l *lexer) emit(k tokKind, text string, pos int) {
	l.toks = append(l.toks, token{kind: k, text: text, pos: pos})
}

func (l *lexer) op(text string, pos int) {
	switch text {
	case "(", "[", "{", `\{`:
		l.depth++
	case ")", "]", "}", `\}`:
		if l.depth > 0 {
			l.depth--
		}
	}
	l.emit(tOp, text, pos)
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func (l *lexer) next() {
	s, i := l.s, l.i
	c := s[i]
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '$' || c == '~':
		l.i++
	case c == '\\':
		l.command()
	case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
		l.number()
	case isLetter(c):
		j := i
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		l.emit(tWord, s[i:j], i)
		l.i = j
	case c >= utf8.RuneSelf:
		l.unicode()
	default:
		l.i++
		two := ""
		if i+1 < len(s) {
			two = s[i : i+2]
		}
		if op, ok := twoCharOps[two]; ok {
			l.op(op, i)
			l.i++
			return
		}
		switch c {
		case '+', '-', '*', '/', '^', '_', '!', '=', '<', '>', ',', ';', ':', '|', '(', ')', '[', ']', '{', '}', '&', '\'', '.':
			l.op(string(c), i)
		case '%':
			l.emit(tPercent, "%", i)
		default:
			l.emit(tBad, string(c), i)
		}
	}
}

// twoCharOps spell the ASCII two-character operators canonically.
var twoCharOps = map[string]string{"<=": "<=", ">=": ">=", "!=": "!=", "==": "=", ":=": "=", "**": "^", "=>": "=>", "->": "=>"}

// unicodeOps maps the non-ASCII symbols that answers use to their ASCII or
// LaTeX spelling.
var unicodeOps = map[rune][2]string{
	'−': {"op", "-"}, '–': {"op", "-"}, '—': {"op", "-"},
	'×': {"op", "*"}, '·': {"op", "*"}, '⋅': {"op", "*"}, '∙': {"op", "*"},
	'÷': {"op", "/"}, '≤': {"op", "<="}, '⩽': {"op", "<="}, '≥': {"op", ">="},
	'⩾': {"op", ">="}, '≠': {"op", "!="}, '≈': {"op", "~~"}, '∈': {"op", "in"},
	'∪': {"op", "cup"}, '∩': {"op", "cap"}, '⇒': {"op", "=>"}, '→': {"op", "=>"},
	'±': {"cmd", "pm"}, '∓': {"cmd", "mp"}, '∞': {"cmd", "infty"}, 'π': {"cmd", "pi"},
	'√': {"cmd", "sqrt"}, '∅': {"cmd", "emptyset"}, '…': {"cmd", "dots"},
	'°': {"deg", ""}, '€': {"skip", ""}, '£': {"skip", ""}, '¥': {"skip", ""},
	'\u00a0': {"skip", ""}, '\u2009': {"skip", ""}, '\u202f': {"skip", ""},
}

func (l *lexer) unicode() {
	r, w := utf8.DecodeRuneInString(l.s[l.i:])
	pos := l.i
	l.i += w
	if m, ok := unicodeOps[r]; ok {
		switch m[0] {
		case "op":
			l.op(m[1], pos)
		case "cmd":
			l.emit(tCmd, m[1], pos)
		case "deg":
			l.emit(tDegree, "°", pos)
		}
		return
	}
	switch r {
	case '²', '³':
		l.op("^", pos)
		l.toks = append(l.toks, token{kind: tNum, text: map[rune]string{'²': "2", '³': "3"}[r], pos: pos,
			rat: big.NewRat(map[rune]int64{'²': 2, '³': 3}[r], 1)})
		return
	}
	if unicode.IsLetter(r) {
		l.emit(tWord, string(r), pos)
		return
	}
	if unicode.IsSpace(r) {
		return
	}
	l.emit(tBad, string(r), pos)
}

// Command classes. Anything not listed is passed to the parser as tCmd,
// which treats an unknown name as a symbol.
var (
	skipCmds = setOf("left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
		"biggl", "biggr", "Biggl", "Biggr", "middle", "displaystyle", "textstyle", "scriptstyle",
		"limits", "nolimits", "quad", "qquad", "hfill", "nonumber", "notag", "hline", "cr",
		"it", "rm", "bf", "ensuremath", "phantom", "enspace", "thinspace", "negthinspace",
		"medspace", "thickspace", "allowbreak", "noindent", "centering", "dollar")
	textCmds = setOf("text", "textbf", "textit", "textrm", "textsf", "texttt", "textnormal", "textup",
		"mbox", "hbox", "mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathbb", "mathcal",
		"mathfrak", "operatorname", "emph", "textsc")
	cmdOps = map[string]string{
		"lt": "<", "gt": ">", "le": "<=", "leq": "<=", "leqslant": "<=", "leqq": "<=",
		"ge": ">=", "geq": ">=", "geqslant": ">=", "geqq": ">=", "ne": "!=", "neq": "!=",
		"in": "in", "cdot": "*", "times": "*", "ast": "*", "div": "/", "colon": ":",
		"approx": "~~", "simeq": "~~", "sim": "~~", "thickapprox": "~~", "equiv": "=",
		"cup": "cup", "cap": "cap", "setminus": "setminus", "backslash": "setminus",
		"to": "=>", "rightarrow": "=>", "Rightarrow": "=>", "implies": "=>", "Longrightarrow": "=>",
		"longrightarrow": "=>", "iff": "=>",
		"lvert": "|", "rvert": "|", "vert": "|", "lVert": "|", "rVert": "|", "Vert": "|", "mid": "|",
		"lbrace": `\{`, "rbrace": `\}`, "langle": "(", "rangle": ")", "lbrack": "[", "rbrack": "]",
	}
	renameCmds = map[string]string{"dfrac": "frac", "tfrac": "frac", "cfrac": "frac", "dbinom": "binom",
		"tbinom": "binom", "fbox": "boxed", "boxed": "boxed", "varnothing": "emptyset", "infin": "infty",
		"dotsc": "dots", "dotsb": "dots", "ldots": "dots", "cdots": "dots", "vdots": "dots", "mp": "mp"}
	// Environments whose begin/end markers are layout only.
	layoutEnvs = setOf("align", "align*", "aligned", "equation", "equation*", "gather", "gather*",
		"gathered", "split", "eqnarray", "eqnarray*", "multline", "multline*", "center", "displaymath", "math")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// knownCmd reports whether name is a command the lexer or parser gives a
// meaning, so that an over-escaped "\\frac" can be read as "\frac".
func knownCmd(name string) bool {
	if skipCmds[name] || textCmds[name] || renameCmds[name] != "" || cmdOps[name] != "" || parserCmds[name] {
		return true
	}
	switch name {
	case "circ", "degree", "begin", "end", "pmod":
		return true
	}
	return false
}

func (l *lexer) command() {
	s := l.s
	start := l.i
	j := start + 1
	if j >= len(s) {
		l.i = j
		return
	}
	c := s[j]
	if c == '\\' {
		k := j + 1
		for k < len(s) && isLetter(s[k]) {
			k++
		}
		if k > j+1 && knownCmd(s[j+1:k]) {
			// An over-escaped command: "\\left" written for "\left".
			l.i = j
			l.command()
			return
		}
		l.op(`\\`, start)
		l.i = j + 1
		return
	}
	if !isLetter(c) {
		l.i = j + 1
		switch c {
		case '{':
			l.op(`\{`, start)
		case '}':
			l.op(`\}`, start)
		case '%':
			l.emit(tPercent, "%", start)
		case '|':
			l.op("|", start)
		case ',', ';', ':', '!', ' ', '>', '\n', '\t', '$', '&', '_', '#', '/':
			// spacing, or an escaped character that carries no value
		default:
			if c >= utf8.RuneSelf {
				_, w := utf8.DecodeRuneInString(s[j:])
				l.i = j + w
			}
			l.emit(tBad, s[start:l.i], start)
		}
		return
	}
	k := j
	for k < len(s) && isLetter(s[k]) {
		k++
	}
	name := s[j:k]
	l.i = k
	if !knownCmd(name) {
		// "\quadx_{2}": spacing glued to the next name.
		for _, pre := range [...]string{"qquad", "quad"} {
			if strings.HasPrefix(name, pre) {
				l.i = j + len(pre)
				return
			}
		}
	}
	switch {
	case skipCmds[name]:
		if (strings.HasPrefix(name, "left") || strings.HasPrefix(name, "right") ||
			strings.HasPrefix(name, "big") || strings.HasPrefix(name, "Big")) && l.i < len(s) && s[l.i] == '.' {
			l.i++ // \left. and \right. are invisible delimiters
		}
		return
	case textCmds[name]:
		content, end, ok := braced(s, skipSpaces(s, l.i))
		if !ok {
			return
		}
		l.i = end
		l.toks = append(l.toks, token{kind: tText, text: content, aux: name, pos: start})
		return
	case name == "circ" || name == "degree":
		l.emit(tDegree, "°", start)
		return
	case name == "pmod":
		// a ≡ b (mod m): the modulus is commentary on the answer.
		if _, end, ok := braced(s, skipSpaces(s, l.i)); ok {
			l.i = end
		}
		return
	case name == "begin" || name == "end":
		env, end, ok := braced(s, skipSpaces(s, l.i))
		if !ok {
			l.emit(tBad, name, start)
			return
		}
		l.i = end
		env = strings.TrimSpace(env)
		if layoutEnvs[env] {
			return
		}
		if name == "begin" && env == "array" {
			// Skip the column specification {cc}.
			if _, end, ok := braced(s, skipSpaces(s, l.i)); ok {
				l.i = end
			}
		}
		l.toks = append(l.toks, token{kind: tCmd, text: name, aux: env, pos: start})
		return
	}
	if o := cmdOps[name]; o != "" {
		l.op(o, start)
		return
	}
	if r := renameCmds[name]; r != "" {
		name = r
	}
	l.emit(tCmd, name, start)
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// braced returns the content of the balanced {…} group that starts at s[i],
// and the index after it. Escaped braces \{ \} do not count.
func braced(s string, i int) (content string, end int, ok bool) {
	if i >= len(s) || s[i] != '{' {
		return "", i, false
	}
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++ // skip the escaped character
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[i+1 : j], j + 1, true
			}
		}
	}
	return "", i, false
}

// thousandsSep returns where the next group of three digits must start if a
// digit-group separator begins at s[j].
func (l *lexer) thousandsSep(j int) (int, bool) {
	s := l.s
	rest := s[j:]
	if k := skipSpaces(s, j); strings.HasPrefix(s[k:], "{,") {
		rest, j = s[k:], k // "14 {, }916"
	}
	switch {
	case strings.HasPrefix(rest, "{,}"):
		return skipSpaces(s, j+3), true
	case strings.HasPrefix(rest, "{, }"):
		return skipSpaces(s, j+4), true
	case strings.HasPrefix(rest, `,\!`):
		return skipSpaces(s, j+3), true
	case strings.HasPrefix(rest, `,\,`):
		return j + 3, true
	case strings.HasPrefix(rest, `\,`), strings.HasPrefix(rest, `\!`), strings.HasPrefix(rest, `\ `):
		return j + 2, true
	case strings.HasPrefix(rest, "~"):
		return j + 1, true
	case strings.HasPrefix(rest, ","):
		// A bare comma groups thousands in plain text, and in LaTeX only
		// outside brackets: "(2,100)" is a pair, "10,455" a number.
		if l.plain || l.depth == 0 {
			return j + 1, true
		}
	case strings.HasPrefix(rest, " "):
		// "10 000": juxtaposed numbers never mean a product in writing.
		return j + 1, true
	}
	return 0, false
}

func threeDigits(s string, k int) bool {
	return k+3 <= len(s) && isDigit(s[k]) && isDigit(s[k+1]) && isDigit(s[k+2]) && (k+3 == len(s) || !isDigit(s[k+3]))
}

func (l *lexer) number() {
	s := l.s
	start := l.i
	j := start
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	var intPart strings.Builder
	intPart.WriteString(s[start:j])
	grouped := false
	if n := j - start; n >= 1 && n <= 3 && s[start] != '0' {
		for {
			k, ok := l.thousandsSep(j)
			if !ok || !threeDigits(s, k) {
				break
			}
			intPart.WriteString(s[k : k+3])
			j = k + 3
			grouped = true
		}
	}
	var frac, rep string
	approx := false
	switch {
	case j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]):
		k := j + 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		frac, j, approx = s[j+1:k], k, true
	case !grouped && j+1 < len(s) && s[j] == ',' && isDigit(s[j+1]) && l.plain:
		// Decimal comma: "2,74", "0,111", "1000,99".
		k := j + 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		frac, j, approx = s[j+1:k], k, true
	case !grouped && strings.HasPrefix(s[j:], "{,}") && j+3 < len(s) && isDigit(s[j+3]):
		k := j + 3
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		frac, j, approx = s[j+3:k], k, true
	}
	// Repeating decimal 0.1\overline{6}.
	if k := j; k < len(s) {
		if s[k] == '.' && !approx {
			k++
		}
		if strings.HasPrefix(s[k:], `\overline`) {
			if content, end, ok := braced(s, skipSpaces(s, k+len(`\overline`))); ok && content != "" && allDigits(content) {
				rep, j = content, end
			}
		}
	}
	exp := ""
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			m := k
			for m < len(s) && isDigit(s[m]) {
				m++
			}
			// 2e3 is scientific; 2e3x or 2ex is not a literal.
			if m == len(s) || !isLetter(s[m]) {
				exp, j, approx = s[j+1:m], m, true
			}
		}
	}
	l.i = j
	digits := intPart.String()
	if digits == "" {
		digits = "0"
	}
	if len(digits)+len(frac)+len(rep) > maxLiteralDigits || len(exp) > 6 {
		l.emit(tBad, s[start:j], start)
		return
	}
	lit := digits
	if frac != "" {
		lit += "." + frac
	}
	if exp != "" {
		e := 0
		for _, c := range strings.TrimLeft(exp, "+-") {
			e = e*10 + int(c-'0')
		}
		if e > maxLiteralExp {
			l.emit(tBad, s[start:j], start)
			return
		}
		lit += "e" + exp
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		l.emit(tBad, s[start:j], start)
		return
	}
	if rep != "" {
		// 0.d₁…dₖ(r₁…rₘ) adds r/(10^k·(10^m − 1)).
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(rep))), nil)
		den.Sub(den, big.NewInt(1))
		den.Mul(den, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil))
		rv, _ := new(big.Int).SetString(rep, 10)
		r.Add(r, new(big.Rat).SetFrac(rv, den))
		approx = false
		lit += "(" + rep + ")"
	}
	l.toks = append(l.toks, token{kind: tNum, text: lit, pos: start, rat: r, approx: approx})
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
