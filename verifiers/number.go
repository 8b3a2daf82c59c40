package verifiers

import (
	"context"
	"math"
	"math/big"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/norm"
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordByte(c byte) bool {
	return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'z' || c == '_' || c >= 0x80
}

// LastNumber returns the last decimal number written in s, in canonical
// form: no sign for zero, "-" for negatives, no thousands separators, no
// leading zeros, no trailing fractional zeros ("+1,024.50" gives "1024.5").
// A number is an optional sign, digits with optional comma groups of three
// (1,024), and an optional fraction (.5 alone is allowed). A sign counts
// only where it cannot be a minus between two operands: after a space,
// bracket, "=" and the like, not after a digit or letter ("3-4" holds 3 and
// 4). Exponents are not read ("1e5" holds 1 and 5): exact scientific and
// symbolic comparison is the math verifier's job. The scan is linear.
func LastNumber(s string) (string, bool) {
	type span struct {
		neg                   bool
		start, intEnd, fs, fe int
	}
	last := span{start: -1}
	for i := 0; i < len(s); {
		c := s[i]
		if !isDigit(c) && !(c == '.' && i+1 < len(s) && isDigit(s[i+1])) {
			i++
			continue
		}
		start := i
		neg := false
		if i > 0 && (s[i-1] == '-' || s[i-1] == '+') && (i < 2 || !isWordByte(s[i-2]) && s[i-2] != ')' && s[i-2] != '.') {
			neg = s[i-1] == '-'
		}
		// Integer part, with comma groups only when every group has three
		// digits and the first has one to three.
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		intEnd := j
		if j-i >= 1 && j-i <= 3 {
			k := j
			for k+3 < len(s) && s[k] == ',' && isDigit(s[k+1]) && isDigit(s[k+2]) && isDigit(s[k+3]) && (k+4 == len(s) || !isDigit(s[k+4])) {
				k += 4
			}
			intEnd = k
		}
		j = intEnd
		fracStart, fracEnd := j, j
		if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
			fracStart = j + 1
			fracEnd = fracStart
			for fracEnd < len(s) && isDigit(s[fracEnd]) {
				fracEnd++
			}
			j = fracEnd
		}
		last = span{neg, start, intEnd, fracStart, fracEnd}
		i = j
	}
	if last.start < 0 {
		return "", false
	}
	return canonicalNumber(last.neg, s[last.start:last.intEnd], s[last.fs:last.fe]), true
}

// canonicalNumber joins sign, integer digits (maybe with commas) and
// fraction digits into the canonical form LastNumber documents.
func canonicalNumber(neg bool, intPart, frac string) string {
	var b strings.Builder
	intPart = strings.TrimLeft(strings.ReplaceAll(intPart, ",", ""), "0")
	frac = strings.TrimRight(frac, "0")
	if neg && (intPart != "" || frac != "") {
		b.WriteByte('-')
	}
	if intPart == "" {
		b.WriteByte('0')
	} else {
		b.WriteString(intPart)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// Number scores a numeric answer (LLaVA-OneVision-1.5 number) read from
// the answer slot: the slot must hold one number (ReadNumbers; the same
// value written twice counts once), equal to the last number of ref. By
// default they must be equal exactly, as rationals, so "1,024.0" equals
// "1024", "1.5e3" equals "1500" and numbers of any length compare exactly.
// With "tol" > 0 they must agree within that relative tolerance,
// |pred − ref| ≤ tol·|ref|, compared in float64. A percent sign is a unit:
// "50%" equals "50" (and not 0.5). Score 1 or 0; a slot with several
// different numbers ("3 or 4", "between 2 and 4") or none scores 0 with a
// Reason. Arithmetic shown in parentheses after the answer ("42 (6 × 7)")
// is working, not an answer; a number the slot rules out ("42, not 41",
// "rather than 41", "instead of 41") does not count; a number written as a bound ("at least
// 42", "more than 42", "42 or more") scores 0. Response and reference are
// normalised first (docs/spec.md#text-normalisation: digits of any
// script, ½, ³, invisible characters), and numbers written in words in
// the slot ("forty-two", "minus 7") are read as digits.
//
// Parameters: "extract" (default "slot"), "lenient" (default false), "tol"
// (default 0).
func Number(ctx context.Context, response, reference string, p Params) (Result, error) {
	return numberRule.verify(ctx, response, reference, p)
}

var numberRule = rule{name: "number", extract: ExtractSlot, params: []string{"tol"}, read: readTol, score: scoreNumber}

func readTol(p Params, c *config) (err error) {
	if c.tol, err = p.Float("tol", 0); err != nil {
		return err
	}
	if c.tol < 0 {
		return paramErr("tol", "%v, want ≥ 0", c.tol)
	}
	return nil
}

func scoreNumber(_ context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	tol := c.tol
	golds, limited := ReadNumbers(ref)
	if len(golds) == 0 && limited {
		return Result{}, tensor.Errorf(ErrTooLarge, "ref", nil, "a number over %d digits", MaxNumberDigits)
	}
	if len(golds) == 0 {
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "no number in %q", clip(ref))
	}
	gold := golds[len(golds)-1]
	if !found {
		return Result{}, nil
	}
	if w, ok := norm.NumberWords(ans); ok {
		ans = w // "forty-two", "minus 7"
	}
	got, limited, bounded := readNumbers(dropWorkings(ans), true)
	switch {
	case bounded:
		return Result{Reason: "a bound (at least, more than, or more, …), not a value"}, nil
	case limited:
		return Result{Reason: "a number over the size limit"}, nil
	case len(got) == 0:
		return Result{Reason: "no number in the answer"}, nil
	}
	for _, g := range got[1:] {
		if g.Cmp(got[0]) != 0 {
			return Result{Reason: "several different numbers in the answer"}, nil
		}
	}
	res := Result{Parsed: ratString(got[0])}
	if ratsMatch(got[0], gold, tol) {
		res.Score, res.Correct = 1, true
	}
	return res, nil
}

// dropWorkings removes arithmetic shown in parentheses after the answer,
// "42 (6 × 7)" or "42 (= 6·7)": digits, operators and spaces only, after a
// first number. Anything else in parentheses ("(or 43)", "(41, 42)") stays
// and counts.
func dropWorkings(s string) string {
	first := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' })
	if first < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:first])
	rest := s[first:]
	for {
		o := strings.IndexByte(rest, '(')
		if o < 0 {
			b.WriteString(rest)
			return b.String()
		}
		c := strings.IndexByte(rest[o:], ')')
		if c < 0 {
			b.WriteString(rest)
			return b.String()
		}
		inner := rest[o+1 : o+c]
		b.WriteString(rest[:o])
		if !isWorking(inner) {
			b.WriteString(rest[o : o+c+1])
		}
		rest = rest[o+c+1:]
	}
}

// isWorking reports arithmetic: digits, at least one operator, spaces.
func isWorking(s string) bool {
	s = strings.NewReplacer(`\times`, "*", `\cdot`, "*", "×", "*", "·", "*", "÷", "/").Replace(s)
	ops, digits := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			digits++
		case strings.IndexByte("+-*/=^", c) >= 0:
			ops++
		case c == ' ' || c == '.':
		default:
			return false
		}
	}
	return ops > 0 && digits > 0
}

func ratsMatch(a, b *big.Rat, tol float64) bool {
	if a.Cmp(b) == 0 {
		return true
	}
	if tol == 0 {
		return false
	}
	x, _ := a.Float64()
	y, _ := b.Float64()
	if math.IsInf(x, 0) || math.IsInf(y, 0) {
		return false
	}
	return math.Abs(x-y) <= tol*math.Abs(y)
}

// ratString renders r as a terminating decimal when it has one of at most
// 40 fraction digits, else as "p/q".
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	for k := 1; k <= 40; k++ {
		s := r.FloatString(k)
		if t, ok := new(big.Rat).SetString(s); ok && t.Cmp(r) == 0 {
			return s
		}
	}
	return r.RatString()
}
