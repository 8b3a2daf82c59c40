// Package norm is the one place where the verifiers normalise text before
// any rule reads it (docs/spec.md#text-normalisation). A rule that looks
// for a word ("not", "or", "answer") or a digit must not be defeated by an
// invisible character inside it, and a fair answer must not be refused
// for the encoding of its digits.
//
// Text applies, in one pass and then Unicode NFKC (golang.org/x/text):
//
//  1. Invisible characters are removed: every format character (Unicode
//     category Cf: zero-width space and joiners, bidi controls, the BOM,
//     the soft hyphen, tag characters), the variation selectors and the
//     combining grapheme joiner, and the characters that render blank
//     although they are letters or symbols (Hangul fillers U+115F, U+1160,
//     U+3164, U+FFA0, the blank Braille pattern U+2800, the Khmer inherent
//     vowels U+17B4–U+17B5). Line and paragraph separators become "\n".
//  2. A decimal digit of any script (category Nd: fullwidth, Arabic-Indic,
//     Devanagari, mathematical bold …) becomes its ASCII digit; the Arabic
//     decimal and thousands separators become "." and ",".
//  3. A vulgar fraction (½, ¾, ⅞, ↉, and the fraction slash ⁄) becomes
//     "1/2" (" 1/2" after a digit, so 3½ reads as the mixed number 3 1/2).
//  4. A run of superscripts becomes "^{…}" (x³ is x^{3}, 10⁻³ is
//     10^{-3}); a run of subscripts becomes "_{…}".
//  5. NFKC then folds the compatibility forms whose meaning it keeps:
//     fullwidth letters and punctuation, ligatures, no-break and other
//     spaces, mathematical alphanumerics (𝜋 is π), circled and
//     parenthesised numbers. What NFKC would fold into something else is
//     mapped first by the steps above (x³ would become x3, ½ 1⁄2), and the
//     masculine ordinal º, used as a degree sign, becomes °.
//
// Constants keep their symbols (π, ∞, e): the math parser reads them, and
// a number verifier has no value for them. Clean applies step 1 only, for
// verifiers that compare text as written (OCR's edit distance applies NFC
// after it, so that a decomposed "é" is the composed one).
//
// Every function is linear in the length of its input and allocates only
// when the text changes; ASCII text is returned as it is.
package norm

import (
	"strings"
	"unicode"
	"unicode/utf8"

	xnorm "golang.org/x/text/unicode/norm"
)

// Invisible reports whether r renders as nothing: a format character, a
// variation selector, the combining grapheme joiner, or a blank filler.
func Invisible(r rune) bool {
	switch {
	case r < 0x80:
		return false
	case unicode.Is(unicode.Cf, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r >= 0x180B && r <= 0x180F: // Mongolian free variation selectors and vowel separator
		return true
	}
	switch r {
	case 0x034F, // combining grapheme joiner
		0x115F, 0x1160, 0x3164, 0xFFA0, // Hangul fillers
		0x2800,         // Braille pattern blank
		0x17B4, 0x17B5: // Khmer inherent vowels
		return true
	}
	return false
}

// Visible reports whether s holds a character that renders as ink: not
// white space and not Invisible. Invalid UTF-8 counts as visible (it
// renders as a replacement character).
func Visible(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !Invisible(r) && !unicode.Is(unicode.Zs, r) {
			return true
		}
	}
	return false
}

// Clean returns s without its invisible characters (step 1 of the package
// rule); line and paragraph separators become "\n", an invalid UTF-8 byte
// Substitute. ASCII text and valid text without such characters are returned
// as they are.
func Clean(s string) string {
	i := firstNonASCII(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
scan:
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if Invisible(r) || r == 0x2028 || r == 0x2029 || r == utf8.RuneError && n == 1 {
			break scan
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteByte(substitute) // an invalid byte, one for one
		case Invisible(r):
		case r == 0x2028 || r == 0x2029:
			b.WriteByte('\n')
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Text returns s under the whole package rule: invisible characters
// removed, digits, fractions, superscripts and subscripts written in
// ASCII, then NFKC. An invalid UTF-8 byte becomes Substitute.
func Text(s string) string {
	i := firstNonASCII(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	protect := !strings.ContainsRune(s, thinKeep)
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			// An invalid byte becomes Substitute: kept as it is, it could
			// join the bytes around a removed character into a new one;
			// one byte for one byte, so the text does not grow.
			b.WriteByte(substitute)
			i++
			continue
		}
		if _, ok := script(r); ok {
			// A run of superscripts or subscripts, written as one group.
			i = writeScript(&b, s, i)
			continue
		}
		i += n
		switch {
		case Invisible(r):
		case r == 0x2028 || r == 0x2029:
			b.WriteByte('\n')
		case r == 0x066B: // Arabic decimal separator
			b.WriteByte('.')
		case r == 0x066C: // Arabic thousands separator
			b.WriteByte(',')
		case r == 0x2044: // fraction slash
			b.WriteByte('/')
		case r == 0x00BA: // masculine ordinal, written for a degree
			b.WriteString("°")
		case (r == 0x2009 || r == 0x202F) && protect && isDigitByte(lastByte(&b)) && digitNext(s, i):
			// A thin space between digits separates thousands ("1 234"):
			// kept for the number readers, which read it so; NFKC would
			// make it a space, which separates two numbers.
			b.WriteRune(thinKeep)
		case unicode.Is(unicode.Nd, r):
			b.WriteByte(byte('0' + digitValue(r)))
		default:
			if f, ok := vulgar[r]; ok {
				if prev := lastByte(&b); prev >= '0' && prev <= '9' {
					b.WriteByte(' ')
				}
				b.WriteString(f)
				continue
			}
			b.WriteRune(r)
		}
	}
	out := b.String()
	if !xnorm.NFKC.IsNormalString(out) {
		out = xnorm.NFKC.String(out)
	}
	if protect && strings.ContainsRune(out, thinKeep) {
		out = strings.ReplaceAll(out, string(thinKeep), "\u2009")
	}
	return out
}

// Substitute replaces an invalid UTF-8 byte: ASCII's SUB control
// character, one byte, which no rule reads as part of a word, number or
// tag.
const Substitute = '\x1a'

const substitute = byte(Substitute)

// thinKeep stands for a thin space between digits while NFKC runs: a
// private-use character, which NFKC leaves alone.
const thinKeep = '\uE000'

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// TextNFC is Clean followed by Unicode NFC: text compared as written, with
// a decomposed accent equal to the composed one.
func TextNFC(s string) string {
	s = Clean(s)
	if firstNonASCII(s) == len(s) || xnorm.NFC.IsNormalString(s) {
		return s
	}
	return xnorm.NFC.String(s)
}

func firstNonASCII(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return i
		}
	}
	return len(s)
}

func lastByte(b *strings.Builder) byte {
	s := b.String()
	if s == "" {
		return 0
	}
	return s[len(s)-1]
}

// digitValue returns the value of a decimal digit r (category Nd). Every
// range of the Nd table is a sequence of whole blocks of ten digits, zero
// first, so the value is the offset in its range modulo 10.
func digitValue(r rune) int {
	for _, rg := range unicode.Nd.R16 {
		if uint32(r) >= uint32(rg.Lo) && uint32(r) <= uint32(rg.Hi) {
			return int(uint32(r)-uint32(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if uint32(r) >= rg.Lo && uint32(r) <= rg.Hi {
			return int(uint32(r)-rg.Lo) % 10
		}
	}
	return 0
}

// vulgar maps the precomposed fractions to ASCII.
var vulgar = map[rune]string{
	'½': "1/2", '⅓': "1/3", '⅔': "2/3", '¼': "1/4", '¾': "3/4", '⅕': "1/5", '⅖': "2/5", '⅗': "3/5",
	'⅘': "4/5", '⅙': "1/6", '⅚': "5/6", '⅐': "1/7", '⅛': "1/8", '⅜': "3/8", '⅝': "5/8", '⅞': "7/8",
	'⅑': "1/9", '⅒': "1/10", '↉': "0/3",
}

// script returns the ASCII character a superscript or subscript stands
// for, and whether r is one: '^' or '_' is the caller's to write.
func script(r rune) (byte, bool) {
	if c, ok := superscripts[r]; ok {
		return c, true
	}
	if c, ok := subscripts[r]; ok {
		return c, true
	}
	return 0, false
}

var superscripts = map[rune]byte{
	'⁰': '0', '¹': '1', '²': '2', '³': '3', '⁴': '4', '⁵': '5', '⁶': '6', '⁷': '7', '⁸': '8', '⁹': '9',
	'⁺': '+', '⁻': '-', '⁼': '=', '⁽': '(', '⁾': ')', 'ⁿ': 'n', 'ⁱ': 'i',
}

var subscripts = map[rune]byte{
	'₀': '0', '₁': '1', '₂': '2', '₃': '3', '₄': '4', '₅': '5', '₆': '6', '₇': '7', '₈': '8', '₉': '9',
	'₊': '+', '₋': '-', '₌': '=', '₍': '(', '₎': ')',
}

// writeScript writes the run of superscripts (or of subscripts) that
// starts at s[i] as ^{…} (or _{…}), or ^c for a single one, and returns
// the index after the run. Invisible characters inside the run are
// skipped.
func writeScript(b *strings.Builder, s string, i int) int {
	r, _ := utf8.DecodeRuneInString(s[i:])
	_, sup := superscripts[r]
	table := subscripts
	mark := byte('_')
	if sup {
		table, mark = superscripts, '^'
	}
	var run []byte
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if c, ok := table[r]; ok {
			run = append(run, c)
		} else if !Invisible(r) {
			break
		}
		i += n
	}
	b.WriteByte(mark)
	if len(run) == 1 {
		b.WriteByte(run[0])
	} else {
		b.WriteByte('{')
		b.Write(run)
		b.WriteByte('}')
	}
	return i
}

// digitNext reports whether the first character at or after s[i] that is
// not invisible is a decimal digit.
func digitNext(s string, i int) bool {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !Invisible(r) {
			return unicode.Is(unicode.Nd, r)
		}
		i += n
	}
	return false
}
