package verifiers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ifevalConfig holds the instructions of one "ifeval" verifier, each a
// pure rule over the response text (IFEval, "Instruction-Following
// Evaluation for Large Language Models", arXiv 2311.07911, §2 Table 1);
// a zero or empty field is no instruction.
type ifevalConfig struct {
	minWords, maxWords           int
	minSentences, maxSentences   int
	minParagraphs, maxParagraphs int
	keywords, forbidden          []string
	letterCase                   string // "lower" or "upper"
	json                         bool
	minPlaceholders              int
	minSections                  int
	sectionMarker                string
	startWith, endWith           string
	n                            int // instructions given
}

var ifevalIntKeys = []string{"min_words", "max_words", "min_sentences", "max_sentences", "min_paragraphs",
	"max_paragraphs", "min_placeholders", "min_sections"}

func readIFEval(p Params, c *config) error {
	f := &ifevalConfig{}
	ints := []*int{&f.minWords, &f.maxWords, &f.minSentences, &f.maxSentences, &f.minParagraphs, &f.maxParagraphs,
		&f.minPlaceholders, &f.minSections}
	for k, key := range ifevalIntKeys {
		v, err := p.Int(key, 0)
		if err != nil {
			return err
		}
		if v < 0 {
			return paramErr(key, "%d, want ≥ 0", v)
		}
		*ints[k] = v
		if v > 0 {
			f.n++
		}
	}
	var err error
	for _, kw := range []struct {
		key string
		dst *[]string
	}{{"keywords", &f.keywords}, {"forbidden_words", &f.forbidden}} {
		if *kw.dst, err = p.Strings(kw.key); err != nil {
			return err
		}
		for i, w := range *kw.dst {
			if (*kw.dst)[i] = strings.ToLower(strings.TrimSpace(w)); (*kw.dst)[i] == "" {
				return paramErr(kw.key, "element %d is empty", i)
			}
		}
		f.n += len(*kw.dst)
	}
	if f.letterCase, err = p.Enum("case", "", "", "lower", "upper"); err != nil {
		return err
	}
	if f.json, err = p.Bool("json", false); err != nil {
		return err
	}
	if f.sectionMarker, err = p.String("section_marker", "Section"); err != nil {
		return err
	}
	if f.startWith, err = p.String("start_with", ""); err != nil {
		return err
	}
	if f.endWith, err = p.String("end_with", ""); err != nil {
		return err
	}
	for _, on := range []bool{f.letterCase != "", f.json, f.startWith != "", f.endWith != ""} {
		if on {
			f.n++
		}
	}
	if f.n == 0 {
		return paramErr("instructions", "no instruction given (min_words, keywords, case, json, …)")
	}
	c.ifeval = f
	return nil
}

// IFEval is the "ifeval" verifier: IFEval-style verifiable instructions
// checked by pure rules on the response (IFEval, arXiv 2311.07911; the
// instruction-following rewards of open-instruct and verl). The text
// checked is the answer region of the slot rule (docs/spec.md#answer-slot):
// after the reasoning, inside the last <answer> when there is one — what
// the reasoning says never counts. Response and instructions are
// normalised first (docs/spec.md#text-normalisation), so invisible
// characters neither pad a count nor hide a forbidden word.
//
// The score is the share of instructions followed (IFEval's
// instruction-level accuracy); Correct means all (prompt-level strict).
// ref is ignored. Instructions, each a parameter (at least one):
//
//	min_words, max_words           words: runs of letters, digits, '_'
//	min_sentences, max_sentences   sentences: text ending at . ! ? or the end
//	min_paragraphs, max_paragraphs paragraphs: blocks between blank lines or ***
//	keywords                       each word or phrase appears (case folded, whole words)
//	forbidden_words                none appears (case folded, whole words); each counts once
//	case                           "lower" or "upper": no letter of the other case
//	json                           true: the text (or its one ``` fence) is one JSON value
//	min_placeholders               square-bracket placeholders such as [address]
//	min_sections, section_marker   sections opened by "Section 1", "SECTION 2" … (marker default "Section")
//	start_with, end_with           the text starts / ends with the phrase (case folded, trimmed)
func IFEval(ctx context.Context, response, reference string, p Params) (Result, error) {
	return ifevalRule.verify(ctx, response, reference, p)
}

var ifevalRule = rule{
	name: "ifeval", extract: ExtractSlot, region: true, shape: shapeWhole,
	params: append(append([]string{}, ifevalIntKeys...), "keywords", "forbidden_words", "case", "json",
		"section_marker", "start_with", "end_with"),
	read:  readIFEval,
	score: scoreIFEval,
}

func scoreIFEval(_ context.Context, text string, found bool, _ string, c *config) (Result, error) {
	f := c.ifeval
	if !found {
		return Result{}, nil
	}
	ok, failed := 0, []string{}
	check := func(name string, pass bool) {
		if pass {
			ok++
		} else {
			failed = append(failed, name)
		}
	}
	lower := strings.ToLower(text)
	words := countWords(text)
	bounds := []struct {
		name      string
		n, lo, hi int
	}{
		{"words", words, f.minWords, f.maxWords},
		{"sentences", countSentences(text), f.minSentences, f.maxSentences},
		{"paragraphs", countParagraphs(text), f.minParagraphs, f.maxParagraphs},
	}
	for _, b := range bounds {
		if b.lo > 0 {
			check("min_"+b.name, b.n >= b.lo)
		}
		if b.hi > 0 {
			check("max_"+b.name, b.n <= b.hi)
		}
	}
	for _, k := range f.keywords {
		check("keyword "+k, containsWord(lower, k))
	}
	for _, k := range f.forbidden {
		check("forbidden "+k, !containsWord(lower, k))
	}
	switch f.letterCase {
	case "lower":
		check("lower case", !strings.ContainsFunc(text, unicode.IsUpper))
	case "upper":
		check("upper case", !strings.ContainsFunc(text, unicode.IsLower))
	}
	if f.json {
		body := strings.TrimSpace(text)
		if s, e, ok := lastFenceSpan(body); ok && strings.HasPrefix(body, "```") && strings.HasSuffix(body, "```") && strings.Count(body, "```") == 2 {
			body = body[s:e] // the text is one fence
		}
		check("json", json.Valid([]byte(strings.TrimSpace(body))))
	}
	if f.minPlaceholders > 0 {
		check("placeholders", countPlaceholders(text) >= f.minPlaceholders)
	}
	if f.minSections > 0 {
		check("sections", countSections(text, f.sectionMarker) >= f.minSections)
	}
	if f.startWith != "" {
		check("start_with", strings.HasPrefix(strings.TrimSpace(lower), strings.ToLower(strings.TrimSpace(f.startWith))))
	}
	if f.endWith != "" {
		check("end_with", strings.HasSuffix(strings.TrimSpace(lower), strings.ToLower(strings.TrimSpace(f.endWith))))
	}
	total := ok + len(failed)
	res := Result{Score: clamp01(float64(ok) / float64(total)), Correct: len(failed) == 0, Parsed: fmt.Sprintf("%d/%d instructions", ok, total)}
	if len(failed) > 0 {
		res.Reason = "not followed: " + clip(strings.Join(failed, ", "))
	}
	return res, nil
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// countWords counts the runs of letters, digits and '_' of s.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := isWordRune(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// countSentences counts the sentences of s: runs of text holding a word,
// ended by '.', '!', '?' (a run of them ends one sentence) or the end.
func countSentences(s string) int {
	n, words := 0, false
	for _, r := range s {
		switch {
		case r == '.' || r == '!' || r == '?':
			if words {
				n++
			}
			words = false
		case isWordRune(r):
			words = true
		}
	}
	if words {
		n++
	}
	return n
}

// countParagraphs counts the blocks of s holding a word, separated by a
// blank line or a line of "***".
func countParagraphs(s string) int {
	n, words := 0, false
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t == "***" {
			if words {
				n++
			}
			words = false
			continue
		}
		if strings.ContainsFunc(t, isWordRune) {
			words = true
		}
	}
	if words {
		n++
	}
	return n
}

// containsWord reports whether the lower-cased text holds phrase as whole
// words (not inside a longer word: "cat" is not in "concatenate").
func containsWord(lower, phrase string) bool {
	for i := 0; i <= len(lower)-len(phrase); {
		k := strings.Index(lower[i:], phrase)
		if k < 0 {
			return false
		}
		k += i
		before, after := k == 0, k+len(phrase) == len(lower)
		if !before {
			r := lastRune(lower[:k])
			before = !isWordRune(r)
		}
		if !after {
			r := firstRune(lower[k+len(phrase):])
			after = !isWordRune(r)
		}
		if before && after {
			return true
		}
		i = k + 1
	}
	return false
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// countPlaceholders counts [name] placeholders: a '[' and the next ']' on
// the same line with at least one visible character between.
func countPlaceholders(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		e := strings.IndexAny(s[i+1:], "]\n[")
		if e > 0 && s[i+1+e] == ']' && strings.TrimSpace(s[i+1:i+1+e]) != "" {
			n++
			i += e + 1
		}
	}
	return n
}

// countSections counts the distinct section headers "<marker> <number>" of
// s (case folded).
func countSections(s, marker string) int {
	lower, m := strings.ToLower(s), strings.ToLower(strings.TrimSpace(marker))
	if m == "" {
		return 0
	}
	seen := map[string]bool{}
	for i := 0; i < len(lower); {
		k := strings.Index(lower[i:], m)
		if k < 0 {
			break
		}
		j := i + k + len(m)
		for j < len(lower) && lower[j] == ' ' {
			j++
		}
		d := j
		for d < len(lower) && isDigit(lower[d]) {
			d++
		}
		if d > j && d-j <= 4 && (i+k == 0 || !isWordRune(lastRune(lower[:i+k]))) {
			seen[lower[j:d]] = true
		}
		i = max(d, i+k+1)
	}
	return len(seen)
}
