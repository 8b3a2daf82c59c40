package verifiers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// Interval is a time span [Start, End] in seconds.
type Interval struct{ Start, End float64 }

// TemporalIoU returns the 1-D intersection over union of two intervals,
// max(0, min(a.End, b.End) − max(a.Start, b.Start)) divided by
// max(a.End, b.End) − min(a.Start, b.Start): the temporal-grounding IoU of
// APPO's NExT-GQA runs ("APPO", arXiv 2602.23823, §4.1 "Implementation
// details": the IoU reward; §7: "we strictly compute the intersection and
// union"). [2.5, 7.0] against [3.0, 7.0] is 4/4.5. Two equal
// zero-length intervals agree (1). The intervals must be valid
// (0 ≤ Start ≤ End, finite); the result is in [0, 1].
func TemporalIoU(a, b Interval) float64 {
	union := max(a.End, b.End) - min(a.Start, b.Start)
	if union <= 0 {
		if a == b {
			return 1
		}
		return 0
	}
	inter := min(a.End, b.End) - max(a.Start, b.Start)
	if inter <= 0 {
		return 0
	}
	return clamp01(inter / union)
}

func (iv Interval) valid() bool {
	return iv.Start >= 0 && iv.End >= iv.Start && !math.IsInf(iv.End, 1)
}

// maxIntervalToken bounds one number of an interval, in bytes.
const maxIntervalToken = 64

// ParseInterval reads a predicted interval from model output: the last
// "[start, end]" or "(start, end)" in s (each time in seconds or as a
// timestamp m:ss or h:mm:ss), the two numbers separated by a
// comma, a hyphen or the word "to", each optionally followed by "s";
// failing that, the two numbers of a text that holds exactly two (so
// "from 2.5s to 7s" reads [2.5, 7]). It reports false when s holds no
// such interval or the interval is not valid (negative, reversed, not
// finite). It runs in time linear in len(s).
func ParseInterval(s string) (Interval, bool) {
	var iv Interval
	found := false
	for i := 0; i < len(s); i++ {
		if s[i] != '[' && s[i] != '(' {
			continue
		}
		if v, ok := bracketInterval(s[i+1:], s[i]); ok {
			iv, found = v, true
		}
	}
	if !found {
		nums := make([]float64, 0, 2)
		for rest := s; ; {
			x, next, ok := nextNumber(rest)
			if !ok {
				break
			}
			if nums = append(nums, x); len(nums) > 2 {
				return Interval{}, false
			}
			rest = next
		}
		if len(nums) != 2 {
			return Interval{}, false
		}
		iv = Interval{nums[0], nums[1]}
	}
	return iv, iv.valid()
}

// bracketInterval parses "a sep b" and the closing bracket after an
// opening one.
func bracketInterval(s string, open byte) (Interval, bool) {
	a, s, ok := leadingNumber(s)
	if !ok {
		return Interval{}, false
	}
	s = strings.TrimLeft(s, " \t")
	switch {
	case strings.HasPrefix(s, ","), strings.HasPrefix(s, "-"):
		s = s[1:]
	case strings.HasPrefix(s, "to "):
		s = s[2:]
	default:
		return Interval{}, false
	}
	b, s, ok := leadingNumber(s)
	if !ok {
		return Interval{}, false
	}
	s = strings.TrimLeft(s, " \t")
	closing := byte(']')
	if open == '(' {
		closing = ')'
	}
	if s == "" || s[0] != closing {
		return Interval{}, false
	}
	return Interval{a, b}, true
}

// leadingNumber parses an unsigned decimal number after optional blanks,
// or a timestamp m:ss, h:mm:ss (seconds may have a fraction: 1:05.5), with
// an optional "s" unit, and returns the rest of s.
func leadingNumber(s string) (float64, string, bool) {
	s = strings.TrimLeft(s, " \t")
	n := numberLen(s)
	if n == 0 {
		return 0, s, false
	}
	x, err := strconv.ParseFloat(s[:n], 64)
	if err != nil || math.IsInf(x, 0) {
		return 0, s, false
	}
	s = s[n:]
	// Timestamp fields: ":" and two digits, each below 60, at most two.
	for k := 0; k < 2 && len(s) >= 3 && s[0] == ':' && isDigit(s[1]) && isDigit(s[2]) && x == math.Trunc(x); k++ {
		m := numberLen(s[1:])
		y, err := strconv.ParseFloat(s[1:1+m], 64)
		if err != nil || y >= 60 || m > 2 && s[3] != '.' {
			return 0, s, false
		}
		x = x*60 + y
		s = s[1+m:]
	}
	if strings.HasPrefix(s, "s") && (len(s) == 1 || !isLetterByte(s[1])) {
		s = s[1:]
	}
	return x, s, true
}

// numberLen is the length of the decimal number (digits with at most one
// point) at the start of s, 0 when there is none or it is too long.
func numberLen(s string) int {
	n, digits, point := 0, 0, false
	for n < len(s) && n <= maxIntervalToken {
		c := s[n]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		default:
			if digits == 0 || n > maxIntervalToken {
				return 0
			}
			return n
		}
		n++
	}
	if digits == 0 || n > maxIntervalToken {
		return 0
	}
	return n
}

// nextNumber finds the next unsigned number of s that does not continue a
// word or another number.
func nextNumber(s string) (float64, string, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		if i > 0 && (isLetterByte(s[i-1]) || s[i-1] == '.') {
			// inside a word ("mp4") or after a stray point: skip the run
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
				i++
			}
			continue
		}
		if i > 0 && s[i-1] == '-' && (i == 1 || !(s[i-2] >= '0' && s[i-2] <= '9' || s[i-2] == 's')) {
			return 0, "", false // a minus sign, not a range's hyphen: no valid time
		}
		x, rest, ok := leadingNumber(s[i:])
		if !ok {
			return 0, "", false
		}
		return x, rest, true
	}
	return 0, "", false
}

func isLetterByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// ParseIntervalRef reads a reference interval: a JSON array of two numbers
// [start, end] with 0 ≤ start ≤ end.
func ParseIntervalRef(ref string) (Interval, error) {
	r0, err := parseIntervalRef(ref)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func parseIntervalRef(ref string) (Interval, error) {
	var v []float64
	if err := json.Unmarshal([]byte(ref), &v); err != nil || len(v) != 2 {
		return Interval{}, tensor.Errorf(ErrSyntax, "ref", nil, "%q, want a JSON array [start, end] of seconds", shortRef(ref))
	}
	iv := Interval{v[0], v[1]}
	if !iv.valid() {
		return Interval{}, tensor.Errorf(ErrSyntax, "ref", nil, "[%v, %v], want 0 ≤ start ≤ end", v[0], v[1])
	}
	return iv, nil
}

// shortRef shortens s for an error message.
func shortRef(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// TemporalIoUVerifier is the "temporal_iou" verifier for temporal
// grounding (APPO's NExT-GQA IoU reward): ref is "[start, end]" in seconds,
// the answer is read under the slot rule (docs/spec.md#answer-slot) and
// parsed by ParseInterval, and the score is TemporalIoU. The answer region
// must hold exactly one interval (times in seconds or as m:ss / h:mm:ss
// timestamps): several different ones, none, an invalid one or a
// retraction after it score 0.
//
// Parameters: "extract" (default "slot"; "auto" reads the last <answer>
// or the whole text, the reading of earlier releases, as does "none" with
// ParseInterval's last interval); "threshold" (default 0.5): Correct means IoU ≥ threshold, the
// usual R@0.5 of temporal grounding (the paper reports mIoU, the mean
// score, and sets no threshold).
func TemporalIoUVerifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return temporalIoURule.verify(ctx, response, reference, p)
}

var temporalIoURule = rule{
	name: "temporal_iou", params: []string{"threshold"},
	extract: ExtractSlot, region: true, shape: shapeStructured,
	has: func(s string) bool { ivs, _ := intervalCandidates(s); return len(ivs) > 0 },
	read: func(p Params, c *config) (err error) {
		c.threshold, err = floatIn(p, "threshold", 0.5, 0, 1, false)
		return err
	},
	score: scoreTemporalIoU,
}

func scoreTemporalIoU(_ context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	threshold := c.threshold
	gold, err := parseIntervalRef(ref)
	if err != nil || !found {
		return Result{}, err
	}
	iv, ok := ParseInterval(ans)
	if c.extract == ExtractSlot {
		// The slot rule: exactly one interval, nothing after it
		// withdrawing it.
		ivs, end := intervalCandidates(ans)
		switch {
		case len(ivs) == 0:
			return Result{Reason: reasonNone}, nil
		case len(ivs) > 1:
			return Result{Reason: reasonSeveral}, nil
		case slot.Retracts(ans[end:]):
			return Result{Reason: slot.ReasonRetracted}, nil
		}
		iv, ok = ivs[0], ivs[0].valid()
	}
	if !ok {
		return Result{}, nil
	}
	s := TemporalIoU(iv, gold)
	parsed := "[" + strconv.FormatFloat(iv.Start, 'g', -1, 64) + ", " + strconv.FormatFloat(iv.End, 'g', -1, 64) + "]"
	return Result{Score: s, Correct: s >= threshold, Parsed: parsed}, nil
}

// intervalCandidates returns the distinct intervals written in s for the
// slot rule: every bracketed one; with none, the interval of a text that
// holds exactly two numbers ("from 1:05 to 1:30"); and the end of the
// last one read. More than two numbers and no brackets is no candidate.
func intervalCandidates(s string) (ivs []Interval, end int) {
	for i := 0; i < len(s); i++ {
		if s[i] != '[' && s[i] != '(' {
			continue
		}
		v, ok := bracketInterval(s[i+1:], s[i])
		if !ok {
			continue
		}
		end = i + 1 + strings.IndexByte(s[i+1:], closerOf(s[i])) + 1
		if !slices.Contains(ivs, v) && len(ivs) < MaxBoxes {
			ivs = append(ivs, v)
		}
	}
	if len(ivs) > 0 {
		return ivs, end
	}
	if iv, ok := ParseInterval(s); ok {
		return []Interval{iv}, strings.LastIndexAny(s, "0123456789") + 1
	}
	return nil, 0
}

func closerOf(open byte) byte {
	if open == '(' {
		return ')'
	}
	return ']'
}
