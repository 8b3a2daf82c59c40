package verifiers

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/tensor"
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

// Number scores a numeric answer (LLaVA-OneVision-1.5 number): the last
// number of the extracted answer against the last number of ref. By
// default they must be equal as decimals, exactly (compared in canonical
// form, so "1,024.0" equals "1024" and numbers of any length compare
// exactly). With "tol" > 0 they must agree within that relative tolerance,
// |pred − ref| ≤ tol·|ref|, compared in float64 (numbers beyond float64's
// range then compare exactly). Score 1 or 0.
//
// Parameters: "extract" (default "auto"), "tol" (default 0).
func Number(ctx context.Context, pred, ref string, p Params) (Result, error) {
	return numberRule.verify(ctx, pred, ref, p)
}

var numberRule = rule{name: "number", extract: ExtractAuto, params: []string{"tol"}, score: scoreNumber}

func scoreNumber(_ context.Context, ans string, found bool, ref string, p Params) (Result, error) {
	tol, err := p.Float("tol", 0)
	if err != nil {
		return Result{}, err
	}
	if tol < 0 {
		return Result{}, paramErr("tol", "%v, want ≥ 0", tol)
	}
	gold, ok := LastNumber(ref)
	if !ok {
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "no number in %q", clip(ref))
	}
	got, ok := LastNumber(ans)
	if !found || !ok {
		return Result{}, nil
	}
	res := Result{Parsed: got}
	if numbersMatch(got, gold, tol) {
		res.Score, res.Correct = 1, true
	}
	return res, nil
}

func numbersMatch(got, gold string, tol float64) bool {
	if got == gold {
		return true
	}
	if tol == 0 {
		return false
	}
	a, errA := strconv.ParseFloat(got, 64)
	b, errB := strconv.ParseFloat(gold, 64)
	if errA != nil || errB != nil || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= tol*math.Abs(b)
}
