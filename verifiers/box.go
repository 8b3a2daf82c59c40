package verifiers

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/tensor"
)

// Box is an axis-aligned box [x1, y1, x2, y2] with x1 ≤ x2 and y1 ≤ y2, in
// any unit (pixels, or Qwen2-VL's 0–1000 grid) as long as both sides use the
// same one.
type Box [4]float64

// Valid reports whether b's coordinates are finite and ordered.
func (b Box) Valid() bool {
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return b[0] <= b[2] && b[1] <= b[3]
}

// Area returns (x2 − x1)·(y2 − y1), 0 for an invalid box.
func (b Box) Area() float64 {
	if !b.Valid() {
		return 0
	}
	return (b[2] - b[0]) * (b[3] - b[1])
}

// String formats b as the JSON array [x1,y1,x2,y2].
func (b Box) String() string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, v := range b {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	sb.WriteByte(']')
	return sb.String()
}

// IoU returns Area(a ∩ b)/Area(a ∪ b) (V-Triune Eq. 3), 0 when either box
// is invalid or the union is empty.
func IoU(a, b Box) float64 {
	if !a.Valid() || !b.Valid() {
		return 0
	}
	w := min(a[2], b[2]) - max(a[0], b[0])
	h := min(a[3], b[3]) - max(a[1], b[1])
	if w <= 0 || h <= 0 {
		return 0
	}
	inter := w * h
	union := a.Area() + b.Area() - inter
	if !(union > 0) || math.IsInf(union, 0) {
		return 0
	}
	return clamp01(inter / union)
}

// scanNumber reads a number (sign, digits, fraction, exponent) at s[i:] and
// returns its end, or i when there is none.
func scanNumber(s string, i int) int {
	j := i
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	digits := 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return i
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// boxAt parses "[a, b, c, d]" or "(a, b, c, d)" at s[i] and returns the box
// and the index after it.
func boxAt(s string, i int) (Box, int, bool) {
	closer := byte(']')
	if s[i] == '(' {
		closer = ')'
	}
	var b Box
	j := i + 1
	for k := range 4 {
		j = skipSpace(s, j)
		end := scanNumber(s, j)
		if end == j {
			return Box{}, 0, false
		}
		v, err := strconv.ParseFloat(s[j:end], 64)
		if err != nil {
			// Out of float64's range: not a box anyone can score.
			return Box{}, 0, false
		}
		b[k] = v
		j = skipSpace(s, end)
		want := byte(',')
		if k == 3 {
			want = closer
		}
		if j >= len(s) || s[j] != want {
			return Box{}, 0, false
		}
		j++
	}
	return b, j, true
}

// ParseBox returns the last group of four numbers in square brackets or
// parentheses in s: "[10, 20, 30.5, 40]", "(10,20,30,40)", and so also the
// box inside {"bbox_2d": [10, 20, 30, 40], "label": "cat"}. It does not
// check the order of the coordinates (see Box.Valid). Each character is
// looked at a bounded number of times, so the scan is linear.
func ParseBox(s string) (Box, bool) {
	var last Box
	found := false
	for i := 0; i < len(s); i++ {
		if s[i] != '[' && s[i] != '(' {
			continue
		}
		if b, end, ok := boxAt(s, i); ok {
			last, found = b, true
			i = end - 1
		}
	}
	return last, found
}

// iouThreshold reads "threshold" and "progress" (Dynamic IoU); at most one
// may be given. def is the threshold when neither is.
func iouThreshold(p Params, def float64, allowZero bool) (float64, error) {
	_, hasT := p["threshold"]
	_, hasP := p["progress"]
	if hasT && hasP {
		return 0, paramErr("progress", "give either threshold or progress, not both")
	}
	if hasP {
		prog, err := p.Float("progress", 0)
		if err != nil {
			return 0, err
		}
		t, err := DynamicIoU(prog)
		if err != nil {
			return 0, paramErr("progress", "%v, want a training progress in [0, 1]", prog)
		}
		return t, nil
	}
	t, err := p.Float("threshold", def)
	if err != nil {
		return 0, err
	}
	if t > 1 || t < 0 || (t == 0 && !allowZero) {
		want := "in (0, 1]"
		if allowZero {
			want = "in [0, 1]"
		}
		return 0, paramErr("threshold", "%v, want %s", t, want)
	}
	return t, nil
}

// IoUVerifier scores one box (V-Triune Eq. 3; LLaVA-OneVision-1.5 bbox):
// ref and the extracted answer each hold a box that ParseBox reads. The
// score is the IoU when it reaches the threshold ε, else 0; with the default
// ε = 0 it is the plain IoU. Correct means IoU ≥ ε, or IoU ≥ 0.5 when ε is
// 0. A prediction without a box, or with an unordered one, scores 0.
//
// Parameters: "extract" (default "auto"); "threshold" ε in [0, 1] (default
// 0) or "progress" p in [0, 1], which sets ε by the Dynamic IoU schedule.
func IoUVerifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return iouRule.verify(ctx, response, reference, p)
}

var iouRule = rule{
	name: "iou", extract: ExtractAuto, params: []string{"threshold", "progress"},
	read: func(p Params, c *config) (err error) {
		c.threshold, err = iouThreshold(p, 0, true)
		return err
	},
	score: scoreIoU,
}

func scoreIoU(_ context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	eps := c.threshold
	gold, ok := ParseBox(ref)
	if !ok {
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "no box [x1,y1,x2,y2] in %q", clip(ref))
	}
	if !gold.Valid() || gold.Area() <= 0 {
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "box %v is empty or unordered", gold)
	}
	got, ok := ParseBox(ans)
	if !found || !ok {
		return Result{}, nil
	}
	iou := IoU(got, gold)
	res := Result{Parsed: got.String()}
	if iou >= eps {
		res.Score = iou
	}
	pass := eps
	if pass == 0 {
		pass = 0.5
	}
	res.Correct = iou >= pass
	return res, nil
}
