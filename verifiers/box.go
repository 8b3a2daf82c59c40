package verifiers

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
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
// The answer is read under the slot rule (docs/spec.md#answer-slot): the
// answer region must hold exactly one box — "[x1, y1, x2, y2]", "(x1, y1,
// x2, y2)", a JSON object with "bbox"/"bbox_2d", or one naming its corners
// ({"x1": …, "y1": …, "x2": …, "y2": …}, also x_min/xmin…, left/top/
// right/bottom); the same box written twice counts once. Several
// different boxes, none, or a retraction after it score 0 with a Reason.
//
// Parameters: "extract" (default "slot"; "auto", the last box of the last
// <answer> or of the whole text, is the reading of earlier releases);
// "threshold" ε in [0, 1] (default 0) or "progress" p in [0, 1], which
// sets ε by the Dynamic IoU schedule.
func IoUVerifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return iouRule.verify(ctx, response, reference, p)
}

var iouRule = rule{
	name: "iou", extract: ExtractSlot, region: true, shape: shapeStructured, has: hasBox,
	params: []string{"threshold", "progress"},
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
	if !found {
		return Result{}, nil
	}
	got, ok := ParseBox(ans)
	if c.extract == ExtractSlot {
		// The slot rule: exactly one box, nothing after it withdrawing it.
		boxes, end := boxCandidates(ans)
		switch {
		case len(boxes) == 0:
			return Result{Reason: reasonNone}, nil
		case len(boxes) > 1:
			return Result{Reason: reasonSeveral}, nil
		case slot.Retracts(ans[end:]):
			return Result{Reason: slot.ReasonRetracted}, nil
		}
		got, ok = boxes[0], true
	}
	if !ok {
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

// hasBox reports whether s holds a box candidate.
func hasBox(s string) bool {
	b, _ := boxCandidates(s)
	return len(b) > 0
}

// maxNamedBox bounds the bytes of a box written as a JSON object.
const maxNamedBox = 512

// maxJSONTries bounds the JSON objects a candidate scan tries to decode
// in one answer, so that its work stays linear in the answer's length.
const maxJSONTries = 16

// boxCandidates returns the distinct boxes written in s — every group of
// four numbers in brackets or parentheses, and every JSON object naming
// its corners — in order, and the end of the last one in s.
func boxCandidates(s string) (boxes []Box, end int) {
	add := func(b Box, e int) {
		end = max(end, e)
		for _, x := range boxes {
			if x == b {
				return
			}
		}
		if len(boxes) <= MaxBoxes {
			boxes = append(boxes, b)
		}
	}
	tries := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			if b, e, ok := boxAt(s, i); ok {
				add(b, e)
				i = e - 1
			}
		case '{':
			if tries == maxJSONTries {
				continue
			}
			tries++
			if b, e, ok := namedBox(s, i); ok {
				add(b, e)
			}
		}
	}
	return boxes, end
}

// cornerNames are the key sets of a box written as a JSON object.
var cornerNames = [...][4]string{
	{"x1", "y1", "x2", "y2"}, {"xmin", "ymin", "xmax", "ymax"}, {"x_min", "y_min", "x_max", "y_max"},
	{"left", "top", "right", "bottom"}, {"x0", "y0", "x1", "y1"},
}

// namedBox reads a JSON object at s[i] that names a box's corners; the
// values may be numbers or numbers written as strings.
func namedBox(s string, i int) (Box, int, bool) {
	// A flat object of a few keys: its '}' is near and no '{' comes first,
	// so that decoding it costs little whatever follows.
	j := strings.IndexAny(s[i+1:min(len(s), i+maxNamedBox)], "{}")
	if j < 0 || s[i+1+j] != '}' {
		return Box{}, 0, false
	}
	dec := json.NewDecoder(strings.NewReader(s[i : i+j+2]))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return Box{}, 0, false
	}
	e := i + int(dec.InputOffset())
	lower := make(map[string]any, len(obj))
	for k, v := range obj {
		lower[strings.ToLower(strings.TrimSpace(k))] = v
	}
next:
	for _, names := range cornerNames {
		var b Box
		for k, n := range names {
			v, ok := lower[n]
			if !ok {
				continue next
			}
			var str string
			switch x := v.(type) {
			case json.Number:
				str = string(x)
			case string:
				str = strings.TrimSpace(x)
			default:
				continue next
			}
			f, err := strconv.ParseFloat(str, 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				continue next
			}
			b[k] = f
		}
		return b, e, true
	}
	return Box{}, 0, false
}
