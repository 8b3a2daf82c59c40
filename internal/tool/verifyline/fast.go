package verifyline

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rlpost/rlpost/verifiers"
)

// The fast paths below read the common shapes of a request and of a
// /verify batch in one pass, several times faster than encoding/json
// (which scans every value twice and goes through reflection). They accept
// a subset of what encoding/json accepts and decode it to the same values;
// anything else (an unusual key spelling, a duplicate key, a lone UTF-16
// surrogate, invalid UTF-8, any error) makes them report !ok, and the
// caller takes encoding/json's path, which gives the canonical result or
// error. FuzzFastMatchesEncodingJSON checks that they never disagree.
//
// Why by hand: measured 2026-11-27 (BENCHMARKS.md, "The JSON fast path
// against the libraries") on a /verify body of 64 items of 2.2 KiB, decoded
// as the service must — item by item, strictly, so that one bad item is
// that item's error — goccy/go-json v0.10.5 took 1.47× this path's time,
// github.com/go-json-experiment/json (encoding/json v2) v1.27.2 1.84× and
// encoding/json 7.5×; only a whole-body decode, which cannot report one
// item's error, was faster (goccy, 0.79×). No library came within 20 %.

// maxDepth is encoding/json's nesting limit; deeper input leaves the fast
// path so that encoding/json reports it.
const maxDepth = 10000

// fastParse reads {"verifier": s, "gold": s, "pred": s, "params": {…}|null}
// with the keys in any order, each at most once, "verifier" and "pred"
// present and non-empty verifier.
func fastParse(data []byte) (req Request, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return req, false
	}
	i = skipSpace(data, i+1)
	var seen [4]bool
	if i < len(data) && data[i] == '}' {
		return req, false // missing fields: encoding/json's error
	}
	for {
		key, j, ok := rawKey(data, i)
		if !ok {
			return req, false
		}
		i = skipSpace(data, j)
		if i >= len(data) || data[i] != ':' {
			return req, false
		}
		i = skipSpace(data, i+1)
		var field int
		switch key {
		case "verifier":
			field = 0
		case "gold":
			field = 1
		case "pred":
			field = 2
		case "params":
			field = 3
		default:
			return req, false
		}
		if seen[field] {
			return req, false
		}
		seen[field] = true
		if field == 3 {
			end, ok := skipValue(data, i, 0)
			if !ok || (data[i] != '{' && string(data[i:end]) != "null") {
				return req, false
			}
			if data[i] == '{' {
				var p verifiers.Params
				if json.Unmarshal(data[i:end], &p) != nil {
					return req, false
				}
				req.Params = p
			}
			i = end
		} else {
			s, end, ok := readString(data, i)
			if !ok {
				return req, false
			}
			switch field {
			case 0:
				req.Verifier = s
			case 1:
				req.Gold = s
			case 2:
				req.Pred = &s
			}
			i = end
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return req, false
		}
		if data[i] == '}' {
			i++
			break
		}
		if data[i] != ',' {
			return req, false
		}
		i = skipSpace(data, i+1)
	}
	if skipSpace(data, i) != len(data) || req.Verifier == "" || req.Pred == nil {
		return req, false
	}
	return req, true
}

// SplitItems cuts a /verify body, {"items": [v, …]} and nothing else, into
// its items' JSON texts, checking that the whole body is valid JSON. !ok
// means the body is not of that plain shape (or is invalid): decode it
// with encoding/json instead.
func SplitItems(body []byte) (items []json.RawMessage, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	i = skipSpace(body, i+1)
	key, j, ok := rawKey(body, i)
	if !ok || key != "items" {
		return nil, false
	}
	i = skipSpace(body, j)
	if i >= len(body) || body[i] != ':' {
		return nil, false
	}
	i = skipSpace(body, i+1)
	if i >= len(body) || body[i] != '[' {
		return nil, false
	}
	i = skipSpace(body, i+1)
	items = []json.RawMessage{}
	if i < len(body) && body[i] == ']' {
		i++
	} else {
		for {
			end, ok := skipValue(body, i, 1)
			if !ok {
				return nil, false
			}
			items = append(items, body[i:end:end])
			i = skipSpace(body, end)
			if i >= len(body) {
				return nil, false
			}
			if body[i] == ']' {
				i++
				break
			}
			if body[i] != ',' {
				return nil, false
			}
			i = skipSpace(body, i+1)
		}
	}
	i = skipSpace(body, i)
	if i >= len(body) || body[i] != '}' {
		return nil, false
	}
	if skipSpace(body, i+1) != len(body) {
		return nil, false
	}
	return items, true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// rawKey reads a key without escapes (any escape leaves the fast path).
func rawKey(data []byte, i int) (key string, end int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return string(data[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", 0, false
		}
	}
	return "", 0, false
}

// strClass sorts the bytes of a JSON string's text: plain ASCII (0), a
// byte that ends a run of text (1: '"', '\\' and the control characters,
// which JSON forbids raw), and bytes of multi-byte UTF-8 (2).
var strClass = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c == '"' || c == '\\' || c < 0x20:
			t[c] = 1
		case c >= 0x80:
			t[c] = 2
		}
	}
	return t
}()

// textRun returns the end of the run of text from data[i] to the next '"',
// '\\' or control character, and whether the run holds non-ASCII bytes.
func textRun(data []byte, i int) (end int, nonASCII bool) {
	for ; i+8 <= len(data); i += 8 {
		w := binary.LittleEndian.Uint64(data[i:])
		if stops(w) {
			break
		}
		nonASCII = nonASCII || w&highBits != 0
	}
	for ; i < len(data); i++ {
		switch strClass[data[i]] {
		case 1:
			return i, nonASCII
		case 2:
			nonASCII = true
		}
	}
	return i, nonASCII
}

// Eight bytes at a time (the bit tricks of "Bit Twiddling Hacks", S. E.
// Anderson): stops reports whether a little-endian word holds a '"', a
// '\\' or a byte below 0x20. Each test is exact as a yes/no answer.
const (
	ones     = 0x0101010101010101
	highBits = 0x8080808080808080
)

func hasZero(w uint64) bool { return (w-ones)&^w&highBits != 0 }

func stops(w uint64) bool {
	return (w-0x20*ones)&^w&highBits != 0 || hasZero(w^('"'*ones)) || hasZero(w^('\\'*ones))
}

// readString decodes the JSON string at data[i]. Escapes write only whole,
// valid UTF-8 sequences, so the decoded text is valid UTF-8 exactly when
// every raw run is: one check of the result covers them all.
func readString(data []byte, i int) (s string, end int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	i, nonASCII := textRun(data, start)
	if i >= len(data) {
		return "", 0, false
	}
	if data[i] == '"' { // no escapes: the common short string
		if nonASCII && !utf8.Valid(data[start:i]) {
			return "", 0, false
		}
		return string(data[start:i]), i + 1, true
	}
	// Escapes: decode into a builder sized for the rest of the input (the
	// decoded text is never longer than its escaped form), so it neither
	// grows nor is copied again by String.
	var buf strings.Builder
	buf.Grow(len(data) - start)
	buf.Write(data[start:i])
	for i < len(data) {
		switch c := data[i]; {
		case c == '"':
			out := buf.String()
			if nonASCII && !utf8.ValidString(out) {
				return "", 0, false
			}
			return out, i + 1, true
		case c == '\\':
			if i+1 >= len(data) {
				return "", 0, false
			}
			switch e := data[i+1]; e {
			case '"', '\\', '/':
				buf.WriteByte(e)
			case 'b':
				buf.WriteByte('\b')
			case 'f':
				buf.WriteByte('\f')
			case 'n':
				buf.WriteByte('\n')
			case 'r':
				buf.WriteByte('\r')
			case 't':
				buf.WriteByte('\t')
			case 'u':
				r, ok := hex4(data, i+2)
				if !ok {
					return "", 0, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// Only a well-formed pair stays on the fast path.
					if i+3 >= len(data) || data[i+2] != '\\' || data[i+3] != 'u' {
						return "", 0, false
					}
					r2, ok := hex4(data, i+4)
					if !ok {
						return "", 0, false
					}
					r = utf16.DecodeRune(r, r2)
					if r == utf8.RuneError {
						return "", 0, false
					}
					i += 6
				}
				buf.WriteRune(r)
			default:
				return "", 0, false
			}
			i += 2
		case c < 0x20:
			return "", 0, false
		default:
			j, na := textRun(data, i)
			nonASCII = nonASCII || na
			buf.Write(data[i:j])
			i = j
		}
	}
	return "", 0, false
}

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skipValue returns the end of the valid JSON value at data[i].
func skipValue(data []byte, i, depth int) (end int, ok bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, false
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == closer {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i, ok = skipString(data, i); !ok {
					return 0, false
				}
				i = skipSpace(data, i)
				if i >= len(data) || data[i] != ':' {
					return 0, false
				}
				i = skipSpace(data, i+1)
			}
			if i, ok = skipValue(data, i, depth+1); !ok {
				return 0, false
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return 0, false
			}
			if data[i] == closer {
				return i + 1, true
			}
			if data[i] != ',' {
				return 0, false
			}
			i = skipSpace(data, i+1)
		}
	case c == '-' || ('0' <= c && c <= '9'):
		return skipNumber(data, i)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	}
	return 0, false
}

func literal(data []byte, i int, lit string) (int, bool) {
	if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

func skipString(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	for i++; i < len(data); i++ {
		for i+8 <= len(data) && !stops(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			break
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if i+1 >= len(data) {
				return 0, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(data, i+2); !ok {
					return 0, false
				}
				i += 5
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// skipNumber follows JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(data []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}
