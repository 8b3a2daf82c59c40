package norm

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xnorm "golang.org/x/text/unicode/norm"
)

// invisibles are characters of every invisible category Clean removes.
var invisibles = []rune{0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD, 0x202E, 0x2066, 0xE0041, 0x034F,
	0xFE0F, 0x180E, 0x3164, 0x115F, 0x1160, 0xFFA0, 0x2800, 0x17B4}

func TestInvisibleCategories(t *testing.T) {
	for _, r := range invisibles {
		assert.True(t, Invisible(r), "%U", r)
		assert.False(t, Visible(string(r)+" \t"+string(r)), "%U", r)
	}
	for _, r := range "aZ09+é中π½" {
		assert.False(t, Invisible(r), "%U", r)
		assert.True(t, Visible(" "+string(r)), "%U", r)
	}
	// Every Cf character of Unicode is invisible.
	for _, rg := range unicode.Cf.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			assert.True(t, Invisible(r), "%U", r)
		}
	}
}

// TestInsertionChangesNothing: inserting invisible characters anywhere
// into a text gives the same Text and Clean as the text itself.
func TestInsertionChangesNothing(t *testing.T) {
	texts := []string{"not 42", "the answer is 3½", "x³ + 2", "٤٢", "４２", "Ｂ", "[1, 2, 3, 4]", "forty-two", "café"}
	for _, s := range texts {
		want, wantClean := Text(s), Clean(s)
		for pos := 0; pos <= len(s); pos++ {
			if pos < len(s) && !utf8.RuneStart(s[pos]) {
				continue
			}
			for _, r := range invisibles {
				in := s[:pos] + string(r) + s[pos:]
				assert.Equal(t, want, Text(in), "%q", in)
				assert.Equal(t, wantClean, Clean(in), "%q", in)
			}
		}
	}
}

// TestDigitsOfEveryScript: each decimal digit of Unicode becomes its ASCII
// digit; the zero of each block of ten is 0.
func TestDigitsOfEveryScript(t *testing.T) {
	n := 0
	for _, tab := range [][]unicode.Range32{r16to32(unicode.Nd.R16), unicode.Nd.R32} {
		for _, rg := range tab {
			require.Zero(t, (rg.Hi-rg.Lo+1)%10, "range %U–%U", rg.Lo, rg.Hi)
			for r := rg.Lo; r <= rg.Hi; r++ {
				got := Text(string(rune(r)))
				require.Equal(t, string(rune('0'+(r-rg.Lo)%10)), got, "%U", r)
				n++
			}
		}
	}
	assert.Greater(t, n, 600)
}

func r16to32(rs []unicode.Range16) []unicode.Range32 {
	out := make([]unicode.Range32, len(rs))
	for i, r := range rs {
		out[i] = unicode.Range32{Lo: uint32(r.Lo), Hi: uint32(r.Hi), Stride: uint32(r.Stride)}
	}
	return out
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"½":          "1/2",
		"3½":         "3 1/2",
		"x³":         "x^3",
		"10⁻³":       "10^{-3}",
		"x₁₂":        "x_{12}",
		"٣٫٥":        "3.5",
		"１，０２４":      "1,024",
		"90º":        "90°",
		"𝜋":          "π",
		"ｎｏｔ":        "not",
		"n\u200bot":  "not",
		"4\u200b2":   "42",
		"e\u0301":    "é",
		"1⁄2":        "1/2",
		"1\u2009234": "1\u2009234",
		"a\u2009b":   "a b",
		"a\u2028b":   "a\nb",
		"plain text": "plain text",
		"\xff5":      "\x1a5",
	} {
		assert.Equal(t, want, Text(in), "Text(%q)", in)
	}
	assert.Equal(t, "é", TextNFC("e\u0301"))
	assert.Equal(t, "x³", TextNFC("x\u200b³"))
}

func TestNumberWords(t *testing.T) {
	for in, want := range map[string]string{
		"forty-two":               "42",
		"Forty two":               "42",
		"minus 7":                 "-7",
		"negative seven":          "-7",
		"one hundred and five":    "105",
		"three thousand":          "3000",
		"two thousand twenty-six": "2026",
		"twelve million":          "12000000",
		"zero":                    "0",
		"one or two":              "1 or 2",
		"twenty one":              "21",
		"five six":                "5 6",
		"someone":                 "someone",
		"minus":                   "minus",
		"it is nineteen apples":   "it is 19 apples",
		"a hundred":               "a hundred",
		"one hundred and cats":    "100 and cats",
		"fourteen hundred":        "1400",
	} {
		got, _ := NumberWords(in)
		assert.Equal(t, want, got, "NumberWords(%q)", in)
	}
}

// TestASCIIUnchanged: ASCII text is never rewritten by Text or Clean, and
// costs no allocation.
func TestASCIIUnchanged(t *testing.T) {
	s := strings.Repeat("The answer is \\boxed{42}. ", 100)
	assert.Equal(t, s, Text(s))
	assert.Equal(t, 0.0, testing.AllocsPerRun(10, func() { _ = Text(s); _ = Clean(s) }))
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"½", "x³⁴", "٤٢", "n\u200bot", "\xff", "e\u0301", "ﷺ", "forty-two", "minus seven"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		// Idempotent, invisible-free, and a bounded expansion.
		if Text(out) != out {
			t.Fatalf("Text not idempotent on %q: %q then %q", s, out, Text(out))
		}
		if len(out) > 18*len(s)+8 {
			t.Fatalf("Text(%q) grew to %d bytes", s, len(out))
		}
		for _, r := range out {
			if Invisible(r) {
				t.Fatalf("Text(%q) = %q keeps %U", s, out, r)
			}
		}
		c := Clean(s)
		if Clean(c) != c || strings.ContainsFunc(c, Invisible) {
			t.Fatalf("Clean(%q) = %q", s, c)
		}
		if utf8.ValidString(s) && !xnorm.NFKC.IsNormalString(strings.ReplaceAll(out, "\u2009", " ")) {
			t.Fatalf("Text(%q) = %q is not NFKC", s, out)
		}
		// Inserting a zero-width space anywhere changes nothing.
		for i := 0; i <= len(s); i += 1 + len(s)/8 {
			if i < len(s) && !utf8.RuneStart(s[i]) {
				continue
			}
			in := s[:i] + "\u200b" + s[i:]
			if Text(in) != out {
				t.Fatalf("Text(%q) = %q but Text(%q) = %q", s, out, in, Text(in))
			}
		}
		w, _ := NumberWords(s)
		if len(w) > len(s) {
			t.Fatalf("NumberWords(%q) = %q grew", s, w)
		}
	})
}
