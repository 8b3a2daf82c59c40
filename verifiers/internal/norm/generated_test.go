package norm

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	xnorm "golang.org/x/text/unicode/norm"
)

// TestGeneratedTexts: on texts generated from the characters each step
// of the rule treats specially (and combining marks NFKC reorders), Text
// is idempotent, NFKC-normal, and blind to an inserted zero-width space.
func TestGeneratedTexts(t *testing.T) {
	alpha := []string{"a", "1", "0", " ", "-", "one", "minus ", "\u200b", "²", "₁", "½", "٣", "\u0301", "\xff", "\xcc", "\u2009", "\uE000", "º", "ﷺ", "\u3164", "⁻", "Ⅻ", "①", "\u0338", "\u1100", "\u1161", "\u11a8", "가", "\u0f73", "\u0344", "\u0958", "\u00a8", "\u1e9b", "\u0345"}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 30000; iter++ {
		var b strings.Builder
		for k := rng.IntN(8); k >= 0; k-- {
			b.WriteString(alpha[rng.IntN(len(alpha))])
		}
		s := b.String()
		out := Text(s)
		if Text(out) != out {
			t.Fatalf("not idempotent %q: %q then %q", s, out, Text(out))
		}
		if utf8.ValidString(s) && !xnorm.NFKC.IsNormalString(strings.ReplaceAll(out, "\u2009", " ")) {
			t.Fatalf("Text(%q) = %q is not NFKC", s, out)
		}
		for i := 0; i <= len(s); i++ {
			if i < len(s) && !utf8.RuneStart(s[i]) {
				continue
			}
			in := s[:i] + "\u200b" + s[i:]
			if Text(in) != out {
				t.Fatalf("Text(%q) = %q but Text(%q) = %q", s, out, in, Text(in))
			}
		}
	}
}
