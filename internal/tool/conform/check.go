package conform

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rlpost/rlpost/tensor"
)

// Kinds of a request's JSON error beside tensor's: a value of the wrong
// JSON type, a field the contract does not define, and text that is not
// JSON at all. NaN and the infinities are tensor.ErrNonFinite, null
// tensor.ErrEmpty, a number outside its field's domain tensor.ErrRange.
var (
	ErrType    = errors.New("wrong JSON type")
	ErrUnknown = errors.New("unknown field")
	ErrSyntax  = errors.New("not JSON")
)

// NegInf is the spelling of −Inf in a per-token field (docs/conformance.md):
// JSON has no infinities, and a log-probability of −Inf is legal at a
// mask-0 position, where the library reads nothing.
const NegInf = "-Infinity"

// FieldError is an error in one value of a request: Path names it as the
// request spells it ("config.clip_low", "logp[0][3]"), Kind is what
// errors.Is finds, Msg what was wrong.
type FieldError struct {
	Path string
	Kind error
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return "request: " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns the kind.
func (e *FieldError) Unwrap() error { return e.Kind }

// opPattern finds a request's op in text that does not parse.
var opPattern = regexp.MustCompile(`"op"\s*:\s*"([a-z_]{1,40})"`)

// maxDepth bounds the nesting of a request, so that a hostile one cannot
// exhaust the stack; the deepest field of the contract is three lists.
const maxDepth = 32

var (
	tokensType  = reflect.TypeOf(Tokens{})
	float64Type = reflect.TypeOf(float64(0))
)

// check parses the JSON text b and checks every value against t (nil for
// any JSON), naming the path of the first value that is wrong. Every
// number is finite, null appears only where t is a pointer (the fields
// whose documented default is null), an object holds only t's fields, and
// a Tokens field's entries are numbers or the string NegInf.
func check(b []byte, t reflect.Type) error {
	p := &parser{b: b}
	p.space()
	if err := p.value(t, 0); err != nil {
		var fe *FieldError
		if p.op == "" {
			// "op" may come after the bad value (json.dumps(sort_keys)
			// puts it late): find it without parsing.
			if m := opPattern.FindSubmatch(b); m != nil {
				p.op = string(m[1])
			}
		}
		if p.op != "" && errors.As(err, &fe) {
			return fmt.Errorf("%s: %w", p.op, err)
		}
		return err
	}
	p.space()
	if p.i != len(p.b) {
		return &FieldError{Kind: ErrSyntax, Msg: "data after the JSON object"}
	}
	return nil
}

type parser struct {
	b    []byte
	i    int
	last int // where the last literal began
	// op is the request's "op", once read, to name in an error.
	op string
	// stack is the path to the value being read: an object's key, or a
	// list's index (key ""). The path is spelt out only for an error, so
	// that checking allocates nothing per value.
	stack []elem
}

type elem struct {
	key   string
	index int
}

func (p *parser) push(key string, index int) { p.stack = append(p.stack, elem{key, index}) }
func (p *parser) pop()                       { p.stack = p.stack[:len(p.stack)-1] }

// path spells the current path as the request does: "config.clip_low",
// "logp[0][3]".
func (p *parser) path() string {
	var sb strings.Builder
	for _, e := range p.stack {
		if e.key == "" {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(e.index))
			sb.WriteByte(']')
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(e.key)
	}
	return sb.String()
}

// inList reports whether the current value is a list's entry.
func (p *parser) inList() bool { return len(p.stack) > 0 && p.stack[len(p.stack)-1].key == "" }

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) syntax(format string, a ...any) error {
	return &FieldError{Path: p.path(), Kind: ErrSyntax, Msg: fmt.Sprintf("offset %d: ", p.i) + fmt.Sprintf(format, a...)}
}

// unmarshalerType is json.Unmarshaler's type.
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// want describes what a value of type t must be.
func want(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	if t == tokensType {
		return "a list of rows of numbers (one flat list with cu_seqlens)"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem()) + " or null"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer ≥ 0"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}

// nonFiniteHint is what a NaN or an infinity is told.
const nonFiniteHint = "a non-finite value is an error, never a silent default (Python's json.dumps writes NaN and Infinity unless allow_nan=False; " +
	"−Inf at a mask-0 position of a per-token field is spelt \"" + NegInf + "\")"

// value parses one value at p.i against t.
func (p *parser) value(t reflect.Type, depth int) error {
	if depth > maxDepth {
		return &FieldError{Path: p.path(), Kind: ErrSyntax, Msg: fmt.Sprintf("nested deeper than %d", maxDepth)}
	}
	if p.i >= len(p.b) {
		return p.syntax("unexpected end of input")
	}
	if t != nil && t.Kind() == reflect.Pointer {
		if p.literal("null") {
			return nil
		}
		t = t.Elem()
	}
	if t != nil && t != tokensType && reflect.PointerTo(t).Implements(unmarshalerType) {
		// A type that decodes itself (rollout_rs_threshold) is a number or
		// a string; its UnmarshalJSON reads which.
		switch c := p.b[p.i]; {
		case c == '"':
			t = reflect.TypeFor[string]()
		case c == '-' || c >= '0' && c <= '9' || c == 'N' || c == 'I':
			t = reflect.TypeFor[float64]()
		default:
			return &FieldError{Path: p.path(), Kind: ErrType, Msg: "not a number or a string"}
		}
	}
	c := p.b[p.i]
	if t == tokensType && c != '[' && c != 'n' && c != 'N' && c != 'I' && c != '-' {
		return &FieldError{Path: p.path(), Kind: ErrType, Msg: "not " + want(t)}
	}
	switch {
	case c == '{':
		return p.object(t, depth)
	case c == '[':
		return p.array(t, depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		if t == nil || t.Kind() == reflect.String || t.Kind() == reflect.Interface {
			return nil
		}
		if isNonFiniteName(s) {
			return &FieldError{Path: p.path(), Kind: ErrType, Msg: fmt.Sprintf("the string %q is not a number: %s", s, nonFiniteHint)}
		}
		return &FieldError{Path: p.path(), Kind: ErrType, Msg: fmt.Sprintf("the string %s is not %s", quoteShort(s), want(t))}
	case c == '-' || c >= '0' && c <= '9':
		return p.number(t)
	case p.literal("true") || p.literal("false"):
		if t == nil || t.Kind() == reflect.Bool || t.Kind() == reflect.Interface {
			return nil
		}
		return &FieldError{Path: p.path(), Kind: ErrType, Msg: fmt.Sprintf("%s is not %s", p.b[p.last:p.i], want(t))}
	case p.literal("null"):
		if t == nil || t.Kind() == reflect.Interface {
			return nil
		}
		msg := "null is not " + want(t)
		if !p.inList() {
			msg += "; omit the field to take its default"
		}
		return &FieldError{Path: p.path(), Kind: tensor.ErrEmpty, Msg: msg}
	}
	for _, w := range [...]string{"NaN", "Infinity", "nan", "inf", "Inf", "+Infinity"} {
		if p.literal(w) {
			return &FieldError{Path: p.path(), Kind: tensor.ErrNonFinite, Msg: w + " is not a JSON number: " + nonFiniteHint}
		}
	}
	r, _ := utf8.DecodeRune(p.b[p.i:])
	return p.syntax("invalid character %q looking for a value", r)
}

// isNonFiniteName reports whether s spells a non-finite float the way
// Python, JavaScript or Go print one.
func isNonFiniteName(s string) bool {
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "nan", "inf", "infinity":
		return true
	}
	return false
}

func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

// literal consumes w if the input continues with it as a whole word.
func (p *parser) literal(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	end := p.i + len(w)
	if end < len(p.b) {
		if c := p.b[end]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return false
		}
	}
	p.last, p.i = p.i, end
	return true
}

func (p *parser) object(t reflect.Type, depth int) error {
	if t != nil && t.Kind() != reflect.Struct && t.Kind() != reflect.Map && t.Kind() != reflect.Interface {
		return &FieldError{Path: p.path(), Kind: ErrType, Msg: "an object is not " + want(t)}
	}
	p.i++ // {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return p.syntax("want a field name in quotes")
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		p.push(key, 0)
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return p.syntax("want ':' after the field name")
		}
		p.i++
		p.space()
		var ft reflect.Type
		switch {
		case t == nil || t.Kind() == reflect.Interface:
		case t.Kind() == reflect.Map:
			ft = t.Elem()
		default:
			f, ok := field(t, key)
			if !ok {
				return &FieldError{Path: p.path(), Kind: ErrUnknown, Msg: "unknown field (docs/conformance.md lists the fields)"}
			}
			ft = f
		}
		at := p.i
		if err := p.value(ft, depth+1); err != nil {
			return err
		}
		p.pop()
		if len(p.stack) == 0 && key == "op" && p.b[at] == '"' {
			p.op, _ = strconv.Unquote(string(p.b[at:p.i]))
		}
		p.space()
		if p.i >= len(p.b) {
			return p.syntax("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.syntax("want ',' or '}' after a field")
		}
	}
}

// field returns the type of t's field with JSON name key.
func field(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			// An embedded struct's fields are the outer object's, as
			// encoding/json promotes them (exported or not).
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := field(et, key); ok {
					return ft, true
				}
				continue
			}
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

func (p *parser) array(t reflect.Type, depth int) error {
	var elem reflect.Type
	tokens := t == tokensType
	switch {
	case t == nil || t.Kind() == reflect.Interface:
	case tokens:
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		elem = t.Elem()
	default:
		return &FieldError{Path: p.path(), Kind: ErrType, Msg: "a list is not " + want(t)}
	}
	p.i++ // [
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	// A Tokens field is rows of entries or, packed, one flat list of
	// entries; its first element says which.
	flat := tokens && p.b[p.i] != '['
	for n := 0; ; n++ {
		p.space()
		p.push("", n)
		var err error
		switch {
		case tokens && flat:
			err = p.entry()
		case tokens:
			if p.i >= len(p.b) || p.b[p.i] != '[' {
				err = &FieldError{Path: p.path(), Kind: ErrType, Msg: "not a row: a per-token field is a list of rows, or with cu_seqlens one flat list, not both"}
				break
			}
			err = p.row(depth + 1)
		default:
			err = p.value(elem, depth+1)
		}
		if err != nil {
			return err
		}
		if done, err := p.next(); err != nil || done {
			return err
		}
	}
}

// next ends one list entry: it pops the entry's path and reads the ','
// that continues the list, or the ']' that ends it (done).
func (p *parser) next() (done bool, err error) {
	p.pop()
	p.space()
	if p.i >= len(p.b) {
		return false, p.syntax("unexpected end of input in a list")
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, nil
	case ']':
		p.i++
		return true, nil
	}
	return false, p.syntax("want ',' or ']' after a list entry")
}

// row parses one row of a Tokens field.
func (p *parser) row(depth int) error {
	if depth > maxDepth {
		return &FieldError{Path: p.path(), Kind: ErrSyntax, Msg: "nested too deep"}
	}
	p.i++ // [
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for n := 0; ; n++ {
		p.space()
		p.push("", n)
		if err := p.entry(); err != nil {
			return err
		}
		if done, err := p.next(); err != nil || done {
			return err
		}
	}
}

// entry parses one token of a Tokens field: a number, or the string NegInf.
func (p *parser) entry() error {
	if p.i < len(p.b) && p.b[p.i] == '"' {
		s, err := p.str()
		if err != nil {
			return err
		}
		if s == NegInf {
			return nil
		}
		return &FieldError{Path: p.path(), Kind: ErrType, Msg: fmt.Sprintf("the string %s is not a number (the one string a per-token field takes is %q, −Inf, at a mask-0 position)", quoteShort(s), NegInf)}
	}
	if p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] >= '0' && p.b[p.i] <= '9') {
		return p.number(float64Type)
	}
	return p.value(float64Type, 0) // null, NaN, a list: its error
}

func (p *parser) number(t reflect.Type) error {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
		if p.literal("Infinity") || p.literal("inf") || p.literal("Inf") {
			return &FieldError{Path: p.path(), Kind: tensor.ErrNonFinite, Msg: "-Infinity is not a JSON number: " + nonFiniteHint}
		}
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intDigits := digits()
	if intDigits == 0 || intDigits > 1 && p.b[p.i-intDigits] == '0' {
		return p.syntax("malformed number")
	}
	integer, exp := true, false
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		integer = false
		if digits() == 0 {
			return p.syntax("malformed number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		integer, exp = false, true
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return p.syntax("malformed number")
		}
	}
	if t == nil {
		return nil
	}
	// The text is materialised only where it must be parsed: a number
	// without an exponent and under 300 digits is a finite float64, and
	// one of at most 18 digits fits an int64.
	text := func() string { return string(p.b[start:p.i]) }
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface:
		if !exp && intDigits < 300 {
			return nil
		}
		if _, err := strconv.ParseFloat(text(), 64); err != nil {
			return &FieldError{Path: p.path(), Kind: tensor.ErrNonFinite, Msg: text() + " overflows a float64: " + nonFiniteHint}
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !integer {
			return &FieldError{Path: p.path(), Kind: ErrType, Msg: text() + " is not an integer"}
		}
		if intDigits <= 18 && t.Bits() == 64 {
			return nil
		}
		if _, err := strconv.ParseInt(text(), 10, t.Bits()); err != nil {
			return &FieldError{Path: p.path(), Kind: tensor.ErrRange, Msg: text() + " is out of an integer's range"}
		}
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !integer || p.b[start] == '-' {
			return &FieldError{Path: p.path(), Kind: ErrType, Msg: text() + " is not " + want(t)}
		}
		if _, err := strconv.ParseUint(text(), 10, t.Bits()); err != nil {
			return &FieldError{Path: p.path(), Kind: tensor.ErrRange, Msg: text() + " is out of an integer's range"}
		}
		return nil
	}
	return &FieldError{Path: p.path(), Kind: ErrType, Msg: "the number " + text() + " is not " + want(t)}
}

// str parses a JSON string and returns its (unescaped) text.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // "
	escaped := false
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '\\':
			escaped = true
			p.i += 2
			continue
		case c == '"':
			p.i++
			if !escaped {
				return string(p.b[start+1 : p.i-1]), nil
			}
			s, err := strconv.Unquote(string(p.b[start:p.i]))
			if err != nil {
				// JSON's \/ and \uXXXX surrogate pairs, which strconv
				// does not read, are rare in a request; the decoder
				// proper reads them.
				return string(p.b[start+1 : p.i-1]), nil
			}
			return s, nil
		case c < 0x20:
			return "", p.syntax("control character in a string")
		}
		p.i++
	}
	return "", p.syntax("unterminated string")
}
