package verifiers

import (
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// Limits of ReadNumbers.
const (
	// MaxNumberDigits bounds the digits of one number, and of the value of
	// a power or scientific form; longer numbers are a limit hit.
	MaxNumberDigits = 4096
	// maxNumbers bounds the numbers ReadNumbers returns: an answer with
	// more is a list anyway.
	maxNumbers = 64
)

// ReadNumbers returns the values of the numbers written in s, in order,
// as exact rationals. The rules (docs/spec.md#number):
//
//   - A number is digits with an optional fraction ("3", "0.25", ".5").
//     Digits after a letter, "_" or "^" belong to a name or a power
//     ("x_1", "m^2", "K2") and are not numbers.
//   - A sign counts where it cannot be a binary minus: "-3", "−3" (U+2212),
//     "x = -3", but "3-4" holds 3 and 4.
//   - A comma, "{,}" or a thin space (U+2009, U+202F, "\,") separates
//     thousands only before exactly three digits: "1,234,567" is one
//     number, "1,2" and "1, 2" are two.
//   - Scientific notation: "1.5e3", "1.5E-3", "1.5 × 10^3", "1.5\times
//     10^{3}", "3*10^5" are one number each ("3e5" is 300000, not 5).
//   - A power of integers "2^10" is its value, 1024 ("10^{-3}" is
//     1/1000); a fraction of integers "3/4" or "\frac{3}{4}" is its value.
//   - "%", "\%" and "percent" after a number are a unit and dropped.
//
// limited is true when a number has more than MaxNumberDigits digits (or
// a power or exponent would produce one); such a number is left out.
func ReadNumbers(s string) (vals []*big.Rat, limited bool) {
	vals, limited, _ = readNumbers(s, false)
	return vals, limited
}

// readNumbers is ReadNumbers; with strict, numbers the text rules out
// ("5, not 6", "rather than 6") are left out, and bounded reports a number
// written as a bound ("at least 5", "5 or more").
func readNumbers(s string, strict bool) (vals []*big.Rat, limited, bounded bool) {
	for i := 0; i < len(s) && len(vals) < maxNumbers; {
		c := s[i]
		if c == '\\' {
			if v, end, ok := readFrac(s, i); ok {
				vals = append(vals, v)
				i = end
				continue
			}
			i++
			for i < len(s) && isASCIILetter(s[i]) {
				i++
			}
			continue
		}
		if !isDigit(c) && !(c == '.' && i+1 < len(s) && isDigit(s[i+1])) {
			i++
			continue
		}
		if i > 0 && (isASCIILetter(s[i-1]) || s[i-1] == '_' || s[i-1] == '^' || isDigit(s[i-1])) {
			for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
				i++
			}
			continue
		}
		v, end, lim := readNumber(s, i)
		start := i
		i = end
		if lim {
			limited = true
			continue
		}
		if strict && negatedBefore(s, start) {
			continue
		}
		if strict && slot.Bounded(s, start, end) {
			bounded = true
		}
		if v != nil {
			vals = append(vals, v)
		}
	}
	return vals, limited, bounded
}

// signBefore reports whether the number at s[i] carries a minus sign.
func signBefore(s string, i int) bool {
	k := i
	if k >= 2 && s[k-1] == ' ' && s[k-2] != ' ' {
		k-- // one space between a sign and its digits: "− 3"
	}
	neg := false
	switch {
	case k > 0 && (s[k-1] == '-' || s[k-1] == '+'):
		neg, k = s[k-1] == '-', k-1
	case k >= 3 && (s[k-3:k] == "−" || s[k-3:k] == "﹣" || s[k-3:k] == "－"):
		neg, k = true, k-3
	default:
		return false
	}
	for k > 0 && s[k-1] == ' ' {
		k--
	}
	if k > 0 {
		p := s[k-1]
		if isASCIILetter(p) || isDigit(p) || p == ')' || p == '}' || p == ']' || p == '.' {
			return false
		}
		if r, _ := utf8.DecodeLastRuneInString(s[:k]); r >= 0x80 && r != '=' && r != '(' && !strings.ContainsRune("≈≤≥≠：:，", r) {
			return false
		}
	}
	return neg
}

// readNumber reads the number at s[i] with its sign, groups, fraction,
// exponent, power, fraction bar and percent, and returns its value and
// end; limited when it is over MaxNumberDigits.
func readNumber(s string, i int) (*big.Rat, int, bool) {
	neg := signBefore(s, i)
	// The digits are a slice of s unless thousands groups must be
	// dropped; only then are they copied.
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	var grouped []byte
	if n := j - i; n >= 1 && n <= 3 {
		for {
			k, ok := groupAt(s, j)
			if !ok {
				break
			}
			if grouped == nil {
				grouped = append(make([]byte, 0, 16), s[i:j]...)
			}
			grouped = append(grouped, s[k:k+3]...)
			j = k + 3
		}
	}
	intEnd := j
	isInt := true
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		isInt = false
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if grouped != nil {
			grouped = append(grouped, s[intEnd:j]...)
		}
	}
	text := s[i:j]
	if grouped != nil {
		text = string(grouped)
	}
	if len(text) > MaxNumberDigits {
		return nil, skipDigits(s, j), true
	}
	if text[0] == '.' {
		text = "0" + text
	}
	v := new(big.Rat)
	if isInt && len(text) <= 18 {
		var x int64
		for k := 0; k < len(text); k++ {
			x = 10*x + int64(text[k]-'0')
		}
		v.SetInt64(x)
	} else if _, ok := v.SetString(text); !ok {
		return nil, j, false
	}
	// Scientific notation: e±n, or × 10^n.
	if exp, end, found, lim := exponentAt(s, j); found {
		if lim {
			return nil, end, true
		}
		v.Mul(v, pow10(exp))
		j = end
		isInt = false
	} else if isInt && j < len(s) && s[j] == '^' {
		if e, end, ok := intArg(s, j+1); ok {
			if e > 0 && float64(len(text))*float64(e) > MaxNumberDigits {
				return nil, end, true
			}
			if e < 0 && (v.Sign() == 0 || float64(len(text))*float64(-e) > MaxNumberDigits) {
				return nil, end, v.Sign() != 0
			}
			n := new(big.Int).Exp(v.Num(), big.NewInt(int64(max(e, -e))), nil)
			if e < 0 {
				v.SetFrac(big.NewInt(1), n)
			} else {
				v.SetInt(n)
			}
			j = end
		}
	}
	// A mixed number: an integer, one space, a proper fraction of small
	// integers not followed by a power or more digits ("3 1/2", as ½
	// after a digit is normalised).
	if isInt && j+3 < len(s) && s[j] == ' ' && isDigit(s[j+1]) && !(j > 0 && s[j-1] == '/') {
		if p, q, end, ok := properFraction(s, j+1); ok && v.IsInt() {
			v.Add(v, big.NewRat(p, q))
			j = end
			isInt = false
		}
	}
	// A fraction of integers: 3/4.
	if isInt && j+1 < len(s) && s[j] == '/' && isDigit(s[j+1]) {
		k := j + 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k-j-1 <= MaxNumberDigits && (k == len(s) || s[k] != '.') {
			den, _ := new(big.Int).SetString(s[j+1:k], 10)
			if den.Sign() != 0 {
				v.Quo(v, new(big.Rat).SetInt(den))
				j = k
			}
		}
	}
	j = percentEnd(s, j)
	if neg {
		v.Neg(v)
	}
	return v, j, false
}

// groupAt reports a thousands group ",ddd" (or "{,}ddd", "\,ddd", a thin
// space) at s[j], not followed by a fourth digit, and where its digits
// start.
func groupAt(s string, j int) (int, bool) {
	var k int
	switch {
	case strings.HasPrefix(s[j:], ","):
		k = j + 1
	case strings.HasPrefix(s[j:], "{,}"):
		k = j + 3
	case strings.HasPrefix(s[j:], `\,`):
		k = j + 2
	case strings.HasPrefix(s[j:], "\u2009"), strings.HasPrefix(s[j:], "\u202f"):
		k = j + 3
	default:
		return 0, false
	}
	if k+3 <= len(s) && isDigit(s[k]) && isDigit(s[k+1]) && isDigit(s[k+2]) && (k+3 == len(s) || !isDigit(s[k+3])) {
		return k, true
	}
	return 0, false
}

// exponentAt reads "e-3", "E+12" or " × 10^{3}" at s[j].
func exponentAt(s string, j int) (exp, end int, found, limited bool) {
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			e, end, ok := signedInt(s, j+1)
			if end < len(s) && isASCIILetter(s[end]) {
				return 0, 0, false, false
			}
			return e, end, true, !ok
		}
		return 0, 0, false, false
	}
	k := j
	for k < len(s) && s[k] == ' ' {
		k++
	}
	var n int
	for _, op := range [...]string{"×", "·", "⋅", `\times`, `\cdot`, "*", "x"} {
		if strings.HasPrefix(s[k:], op) {
			n = len(op)
			break
		}
	}
	if n == 0 {
		return 0, 0, false, false
	}
	k += n
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if !strings.HasPrefix(s[k:], "10^") {
		return 0, 0, false, false
	}
	k += 3
	braced := k < len(s) && s[k] == '{'
	if braced {
		k++
	}
	e, end, ok := signedInt(s, k)
	if end == k {
		return 0, 0, false, false
	}
	if braced {
		if end >= len(s) || s[end] != '}' {
			return 0, 0, false, false
		}
		end++
	}
	return e, end, true, !ok
}

// signedInt reads an optionally signed integer of at most four digits;
// ok is false (a limit hit) for a longer one.
func signedInt(s string, k int) (int, int, bool) {
	neg := false
	if k < len(s) && (s[k] == '-' || s[k] == '+') {
		neg = s[k] == '-'
		k++
	}
	start := k
	e := 0
	for k < len(s) && isDigit(s[k]) {
		if k-start < 5 {
			e = 10*e + int(s[k]-'0')
		}
		k++
	}
	if k == start {
		return 0, start, true
	}
	if neg {
		e = -e
	}
	return e, k, k-start <= 4 && e <= MaxNumberDigits && e >= -MaxNumberDigits
}

// intArg reads the exponent of a power: "10" or "{10}".
func intArg(s string, k int) (int, int, bool) {
	braced := k < len(s) && s[k] == '{'
	if braced {
		k++
	}
	neg := braced && k < len(s) && s[k] == '-'
	if neg {
		k++
	}
	start := k
	e := 0
	for k < len(s) && isDigit(s[k]) && k-start < 6 {
		e = 10*e + int(s[k]-'0')
		k++
	}
	if k == start || k < len(s) && isDigit(s[k]) {
		return 0, k, false
	}
	if braced {
		if k >= len(s) || s[k] != '}' {
			return 0, k, false
		}
		k++
	}
	if neg {
		e = -e
	}
	return e, k, true
}

func pow10(e int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil)
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// readFrac reads \frac{a}{b} (\dfrac, \tfrac) of two integers at s[i].
func readFrac(s string, i int) (*big.Rat, int, bool) {
	j := -1
	for _, p := range [...]string{`\frac`, `\dfrac`, `\tfrac`} {
		if strings.HasPrefix(s[i:], p) {
			j = i + len(p)
			break
		}
	}
	if j < 0 {
		return nil, 0, false
	}
	var parts [2]*big.Int
	for a := range parts {
		if j >= len(s) || s[j] != '{' {
			return nil, 0, false
		}
		k := j + 1
		for k < len(s) && isDigit(s[k]) && k-j <= MaxNumberDigits {
			k++
		}
		if k == j+1 || k >= len(s) || s[k] != '}' {
			return nil, 0, false
		}
		parts[a], _ = new(big.Int).SetString(s[j+1:k], 10)
		j = k + 1
	}
	if parts[1].Sign() == 0 {
		return nil, 0, false
	}
	v := new(big.Rat).SetFrac(parts[0], parts[1])
	if signBefore(s, i) {
		v.Neg(v)
	}
	return v, percentEnd(s, j), true
}

func percentEnd(s string, j int) int {
	k := j
	for k < len(s) && s[k] == ' ' {
		k++
	}
	switch {
	case strings.HasPrefix(s[k:], "%"):
		return k + 1
	case strings.HasPrefix(s[k:], `\%`):
		return k + 2
	case len(s)-k >= 7 && strings.EqualFold(s[k:k+7], "percent"):
		return k + 7
	}
	return j
}

func skipDigits(s string, j int) int {
	for j < len(s) && (isDigit(s[j]) || s[j] == '.' || s[j] == ',') {
		j++
	}
	return j
}

// negatedBefore reports a number at s[i] that the text before it rules
// out: "not 6", "rather than 6", "instead of 6".
func negatedBefore(s string, i int) bool {
	k := i
	for k > 0 && strings.IndexByte(" $(-+", s[k-1]) >= 0 {
		k--
	}
	head := strings.ToLower(s[max(0, k-12):k])
	for _, w := range [...]string{"not", "rather than", "instead of", "never"} {
		if strings.HasSuffix(head, w) && (len(head) == len(w) || !isASCIILetter(head[len(head)-len(w)-1])) {
			return true
		}
	}
	return false
}

// properFraction reads p/q at s[i], 0 < p < q, each of at most six
// digits, not followed by a digit, '.', '/' or '^'.
func properFraction(s string, i int) (p, q int64, end int, ok bool) {
	k := i
	for k < len(s) && isDigit(s[k]) && k-i < 7 {
		p = p*10 + int64(s[k]-'0')
		k++
	}
	if k == i || k-i > 6 || k+1 >= len(s) || s[k] != '/' || !isDigit(s[k+1]) {
		return 0, 0, 0, false
	}
	m := k + 1
	for m < len(s) && isDigit(s[m]) && m-k-1 < 7 {
		q = q*10 + int64(s[m]-'0')
		m++
	}
	if m-k-1 > 6 || m < len(s) && strings.IndexByte("0123456789./^", s[m]) >= 0 || p == 0 || p >= q {
		return 0, 0, 0, false
	}
	return p, q, m, true
}
