package norm

import (
	"strconv"
	"strings"
)

// Number words, English: "forty-two", "minus 7", "one hundred and five",
// "three thousand", "negative twelve".
var (
	units = map[string]int64{
		"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
		"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
		"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
	}
	tens = map[string]int64{
		"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
	}
	scales = map[string]int64{"thousand": 1e3, "million": 1e6, "billion": 1e9}
	signs  = map[string]bool{"minus": true, "negative": true}
)

// maxWordRun bounds the words of one number; a longer run is left as
// words (no number), which keeps the work per word constant.
const maxWordRun = 16

// NumberWords rewrites every English number written in words in s as
// digits: "forty-two" is 42, "minus seven" and "minus 7" are -7, "one
// hundred and five" is 105, "two thousand twenty" 2020. It is meant for a
// short answer slot, not for prose ("no one" would become "no 1"); it
// reports whether it changed anything. Case is ignored; a hyphen or
// spaces join the words of one number, and "and" joins only after
// "hundred", "thousand", "million" or "billion". A sign word before
// digits ("minus 7") becomes "-". Linear in len(s).
func NumberWords(s string) (string, bool) {
	var b strings.Builder
	changed := false
	i := 0
	for i < len(s) {
		if !isLetter(s[i]) || i > 0 && isLetter(s[i-1]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		v, neg, end, ok := readWords(s, i)
		if !ok {
			j := i
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
			continue
		}
		changed = true
		if neg {
			b.WriteByte('-')
		}
		if v >= 0 {
			b.WriteString(strconv.FormatInt(v, 10))
		}
		i = end
	}
	if !changed {
		return s, false
	}
	return b.String(), true
}

// readWords reads a number in words at s[i]. v < 0 means a sign word
// followed by digits: only the sign is written, the digits follow as
// they are.
func readWords(s string, i int) (v int64, neg bool, end int, ok bool) {
	w, e := word(s, i)
	if signs[w] {
		k := skipJoin(s, e, false)
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			return -1, true, k, true
		}
		if k < len(s) && isLetter(s[k]) && !signs[firstWord(s, k)] {
			if v, _, end, ok := readWords(s, k); ok && v >= 0 {
				return v, true, end, true
			}
		}
		return 0, false, 0, false
	}
	var total, group int64
	n := 0
	end = i
	last := "" // the kind of the last word: "unit", "ten", "hundred", "scale"
	for k := i; k < len(s) && n < maxWordRun; n++ {
		w, e := word(s, k)
		switch {
		case units[w] > 0 || w == "zero":
			if last == "unit" || last == "ten" && units[w] >= 10 || w == "zero" && (n > 0) {
				return finish(total, group, end, n)
			}
			group += units[w]
			last = "unit"
		case tens[w] > 0:
			if last == "unit" || last == "ten" {
				return finish(total, group, end, n)
			}
			group += tens[w]
			last = "ten"
		case w == "hundred":
			if last != "unit" && last != "ten" || group >= 100 {
				return finish(total, group, end, n)
			}
			group *= 100
			last = "hundred"
		case scales[w] > 0:
			if last == "" || last == "scale" || group == 0 {
				return finish(total, group, end, n)
			}
			total += group * scales[w]
			group = 0
			last = "scale"
		default:
			return finish(total, group, end, n)
		}
		end = e
		k = skipJoin(s, e, last == "hundred" || last == "scale")
		if k == e || k >= len(s) || !isLetter(s[k]) {
			n++
			break
		}
	}
	return finish(total, group, end, n)
}

func finish(total, group int64, end, n int) (int64, bool, int, bool) {
	if n == 0 || n >= maxWordRun {
		return 0, false, 0, false
	}
	return total + group, false, end, true
}

// word returns the lower-cased letters at s[i] and their end.
func word(s string, i int) (string, int) {
	j := i
	for j < len(s) && isLetter(s[j]) && j-i < 16 {
		j++
	}
	if j < len(s) && isLetter(s[j]) {
		return "", j
	}
	return strings.ToLower(s[i:j]), j
}

// skipJoin skips what joins two words of a number: one hyphen or spaces,
// and "and" after a hundred or a scale.
func skipJoin(s string, i int, and bool) int {
	k := i
	if k < len(s) && s[k] == '-' {
		return k + 1
	}
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if and && k+3 < len(s) && strings.EqualFold(s[k:k+3], "and") && s[k+3] == ' ' {
		k += 4
		for k < len(s) && s[k] == ' ' {
			k++
		}
	}
	return k
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func firstWord(s string, i int) string {
	w, _ := word(s, i)
	return w
}
