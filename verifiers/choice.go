package verifiers

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/norm"
)

// FirstLetter returns the first letter of s (any script), or false when s
// holds none. "(b) a cat" gives 'b'.
func FirstLetter(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return r, true
		}
	}
	return 0, false
}

// Choice scores a multiple-choice answer (LLaVA-OneVision-1.5
// multiple_choice) read from the answer slot: the slot must name exactly
// one option letter (ReadChoice), which must equal the option of ref,
// case-insensitively. Score 1 or 0. A slot naming several options
// ("A, B, C, D", "A or B", "(A) (B)") or none scores 0 with a Reason.
//
// Options the slot rules out ("(B) and not (A)", "B, definitely not C",
// "B instead of A") are not named. When the slot names no letter, an
// answer equal to the text of the reference's option ("42" for "(B) 42")
// or of one of the "options" (case, surrounding punctuation and the
// encoding ignored) names that option. Response and reference are
// normalised first (docs/spec.md#text-normalisation).
//
// Parameters: "extract" (default "slot"), "lenient" (default false),
// "options" (default none: the texts of options A, B, C, … in order).
func Choice(ctx context.Context, response, reference string, p Params) (Result, error) {
	return choiceRule.verify(ctx, response, reference, p)
}

var choiceRule = rule{name: "choice", extract: ExtractSlot, params: []string{"options"}, read: readOptions, score: scoreChoice}

// readOptions reads "options", the texts of options A, B, C, … in order.
func readOptions(p Params, c *config) error {
	opts, err := p.Strings("options")
	if err != nil {
		return err
	}
	if len(opts) > 26 {
		return paramErr("options", "%d options, want at most 26 (A–Z)", len(opts))
	}
	c.options = make([]string, len(opts))
	for i, o := range opts {
		if c.options[i] = normText(norm.Text(o)); c.options[i] == "" {
			return paramErr("options", "option %c is empty", 'A'+i)
		}
	}
	return nil
}

func scoreChoice(_ context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	gold, _, ok := ReadChoice(ref)
	if !ok {
		r, ok := FirstLetter(ref)
		if !ok {
			return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "no letter in %q", clip(ref))
		}
		gold = unicode.ToUpper(r)
	}
	if !found {
		return Result{}, nil
	}
	got, reason, ok := ReadChoice(ans)
	if !ok {
		// An answer by the option's text ("42" for a ref "(B) 42") is
		// that option.
		if text := optionText(ref); text != "" && normText(ans) == text {
			return Result{Score: 1, Correct: true, Parsed: string(gold)}, nil
		}
		// Or by the text of one of the options given as a parameter.
		if i := slices.Index(c.options, normText(ans)); i >= 0 {
			res := Result{Parsed: string(rune('A' + i))}
			if rune('A'+i) == gold {
				res.Score, res.Correct = 1, true
			}
			return res, nil
		}
		return Result{Reason: reason}, nil
	}
	res := Result{Parsed: string(got)}
	if got == gold {
		res.Score, res.Correct = 1, true
	}
	return res, nil
}

// ReadChoice reads the option letter an answer names, upper-cased: "B",
// "(B)", "B)", "B.", "B: 42", "**B**", "Option B", "the answer is (D)",
// "\textbf{(C)}". The letter must open the answer (after "option",
// "choice", "answer" and punctuation) and stand alone: "A cat sat" names
// no option. An answer naming two or more different options in option
// form ("A, B", "A or B", "(A) (B)", "B) or C)") names none; reason says
// why ok is false.
func ReadChoice(s string) (letter rune, reason string, ok bool) {
	s = choiceNoise.Replace(s)
	s = strings.TrimSpace(s)
	for changed := true; changed; {
		changed = false
		for _, w := range [...]string{"the", "correct", "final", "answer", "option", "choice", "is", ":", "-",
			"i choose", "i pick", "i select", "i would choose", "i'd choose", "i go with", "my", "it's", "it is",
			"therefore", "thus", "hence", "so", ",", "i think", "i believe", "i guess", "i would say", "i'd say"} {
			if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) && (len(s) == len(w) || !isWordByte(s[len(w)]) || !isWordByte(w[0])) {
				s, changed = strings.TrimSpace(s[len(w):]), true
			}
		}
	}
	if s == "" {
		return 0, "no option letter in the answer", false
	}
	if r, n := utf8.DecodeRuneInString(s); n == len(s) && unicode.IsLetter(r) {
		return unicode.ToUpper(r), "", true // one letter of any script
	}
	if len(s) > 1 && isASCIILetter(s[0]) && !isWordByte(s[1]) {
		// "B is correct", "B is right": the letter, then a verdict.
		switch strings.ToLower(strings.TrimRight(strings.TrimSpace(s[1:]), " .!")) {
		case "is correct", "is right", "is the correct one", "is the right one", "is the best", "is true":
			s = s[:1]
		}
	}
	r, end, ok := optionAt(s, 0, true)
	if !ok {
		return 0, "the answer does not open with an option letter", false
	}
	// Any other option named in option form before the reasoning starts
	// ("because", "since") makes it a list.
	if k := reasonStart(s); k >= 0 {
		s = s[:k]
	}
	for i := end; i < len(s); i++ {
		if o, _, ok := optionAt(s, i, false); ok && o != r {
			return 0, "several options in the answer", false
		}
	}
	return r, "", true
}

// optionText returns the text of the option a reference names after its
// letter ("(B) 42", "B. 42" give "42"), normalised by normText; "" when
// there is none.
func optionText(ref string) string {
	s := strings.TrimSpace(choiceNoise.Replace(ref))
	if _, end, ok := optionAt(s, 0, true); ok && end < len(s) {
		return normText(strings.TrimLeft(s[end:], ".):,;] "))
	}
	return ""
}

// normText lower-cases s and drops surrounding punctuation and space, so
// that "42." matches "42".
func normText(s string) string {
	return strings.ToLower(strings.Trim(choiceNoise.Replace(s), " \t\n.!,;:"))
}

// choiceNoise are the wrappers removed before a choice is read.
var choiceNoise = strings.NewReplacer(`\textbf{`, "", `\text{`, "", `\mathrm{`, "", `\mathbf{`, "", "{", "", "}", "",
	`\ `, " ", `\quad`, " ", "$", "", "*", "", "`", "", "\"", "", "'", "", "_", " ")

// optionAt reads an option letter at s[i]: "(B)", "[B]", or a capital (or
// at the start, any) letter standing alone. lead marks the start of the
// answer, where a bare letter needs only to be followed by the end, a
// space-free mark (".", ")", ":", ",") or an option text after ") "/". ";
// elsewhere a letter counts as an option when in brackets, followed by
// ")", "." or ",", at the end, or after "or"/"and"/",".
func optionAt(s string, i int, lead bool) (rune, int, bool) {
	if i > 0 && isWordByte(s[i-1]) {
		return 0, 0, false
	}
	if i < len(s) && (s[i] == '(' || s[i] == '[') {
		j := i + 1
		if j+1 < len(s) && isASCIILetter(s[j]) && (s[j+1] == ')' || s[j+1] == ']') {
			if lead || isUpper(s[j]) {
				return unicode.ToUpper(rune(s[j])), j + 2, true
			}
		}
		return 0, 0, false
	}
	if i >= len(s) || !isASCIILetter(s[i]) || i+1 < len(s) && isWordByte(s[i+1]) {
		return 0, 0, false
	}
	c := s[i]
	next := byte(0)
	if i+1 < len(s) {
		next = s[i+1]
	}
	r := unicode.ToUpper(rune(c))
	if lead {
		switch next {
		case 0, '.', ')', ':', ',', ';', ']':
			return r, i + 1, true
		}
		rest := strings.TrimSpace(s[i+1:])
		if strings.TrimRight(rest, " .!") == "" {
			return r, i + 1, true
		}
		// "B - the cat", "B because …": a justification after the letter.
		for _, w := range [...]string{"-", "—", "–", "because ", "since ", "as ", "(not ", "(and not ", "not ", "and not ", "but not ", "instead of ", "rather than "} {
			if next == ' ' && strings.HasPrefix(strings.ToLower(rest), w) {
				return r, i + 1, true
			}
		}
		return 0, 0, false
	}
	if !isUpper(c) || c == 'I' && next != ')' {
		return 0, 0, false
	}
	switch next {
	case 0, ')', ',', ']':
		return r, i + 1, true
	case '.':
		if i+2 >= len(s) || s[i+2] == ' ' || s[i+2] == '\n' {
			return r, i + 1, true
		}
	}
	if strings.TrimRight(s[i+1:], " .!") == "" {
		return r, i + 1, true
	}
	before := strings.TrimRight(s[:i], " ")
	if strings.HasSuffix(before, ",") || strings.HasSuffix(strings.ToLower(before), " or") || strings.HasSuffix(strings.ToLower(before), " and") || strings.HasSuffix(before, "/") {
		return r, i + 1, true
	}
	return 0, 0, false
}

// reasonStart returns where a justification starts in a choice answer:
// "(B) because it is larger than (A)" names B only.
func reasonStart(s string) int {
	best := -1
	for _, w := range [...]string{" because ", " since ", " as ", " which ", " while ", " whereas ", " unlike ", " than ",
		// A negated option is ruled out, not named: "(B) and not (A)",
		// "B, definitely not C", "B (not A)", "B instead of A".
		" not ", ",not ", "(not ", " never ", " except ", " instead of ", " excluding "} {
		if k := indexASCIIFold(s, w); k >= 0 && (best < 0 || k < best) {
			best = k
		}
	}
	return best
}

// indexASCIIFold is strings.Index ignoring ASCII case, with positions in s
// itself (strings.ToLower may change the length of invalid UTF-8).
func indexASCIIFold(s, w string) int {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for j < len(w) && s[i+j]|0x20 == w[j]|0x20 && (w[j] != ' ' || s[i+j] == ' ') {
			j++
		}
		if j == len(w) {
			return i
		}
	}
	return -1
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isUpper(c byte) bool       { return 'A' <= c && c <= 'Z' }

// clip shortens s for an error message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
