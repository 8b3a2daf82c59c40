package verifiers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// Detection is one labelled box.
type Detection struct {
	Label string
	Box   Box
}

// detectionJSON is the wire form: Qwen2.5-VL writes "bbox_2d", others
// "bbox"; one of the two must hold four numbers.
type detectionJSON struct {
	Label  string    `json:"label"`
	BBox   []float64 `json:"bbox"`
	BBox2D []float64 `json:"bbox_2d"`
}

// ParseDetections reads a JSON array of objects {"label": "cat", "bbox":
// [x1, y1, x2, y2]} ("bbox_2d" is accepted for "bbox"), or a single such
// object, starting at the first '[' or '{' of s; text around it (a ```json
// fence, words) is ignored. Labels are trimmed. It fails on anything else:
// a missing label or box, a box of other than four numbers, a number beyond
// float64, more than MaxBoxes entries. Nesting is bounded by
// encoding/json's limit (10 000 levels, errors beyond) and time is linear
// in len(s).
func ParseDetections(s string) ([]Detection, error) {
	r0, err := parseDetections(s)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func parseDetections(s string) ([]Detection, error) {
	i := strings.IndexAny(s, "[{")
	if i < 0 {
		return nil, tensor.Errorf(ErrSyntax, "detections", nil, "no JSON array or object")
	}
	ds, _, err := decodeDetections(s[i:])
	return ds, err
}

// decodeDetections reads the JSON value at the start of s as
// parseDetections does and returns its length in bytes.
func decodeDetections(s string) ([]Detection, int, error) {
	ds, n, _, err := decodeDetectionsOpen(s)
	return ds, n, err
}

// decodeDetectionsOpen is decodeDetections that also reports a value left
// open to the end of s.
func decodeDetectionsOpen(s string) ([]Detection, int, bool, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw []detectionJSON
	if s[0] == '{' {
		var one detectionJSON
		if err := dec.Decode(&one); err != nil {
			return nil, int(dec.InputOffset()), errors.Is(err, io.ErrUnexpectedEOF), tensor.Errorf(ErrSyntax, "detections", nil, "%v", err)
		}
		raw = []detectionJSON{one}
	} else if err := dec.Decode(&raw); err != nil {
		return nil, int(dec.InputOffset()), errors.Is(err, io.ErrUnexpectedEOF), tensor.Errorf(ErrSyntax, "detections", nil, "%v", err)
	}
	if len(raw) > MaxBoxes {
		return nil, int(dec.InputOffset()), false, tensor.Errorf(ErrTooLarge, "detections", nil, "%d boxes, limit %d", len(raw), MaxBoxes)
	}
	out := make([]Detection, len(raw))
	for k, d := range raw {
		coords := d.BBox
		if coords == nil {
			coords = d.BBox2D
		}
		if len(coords) != 4 {
			return nil, int(dec.InputOffset()), false, tensor.Errorf(ErrSyntax, "detections", tensor.At(k), "box has %d numbers, want 4 under \"bbox\" or \"bbox_2d\"", len(coords))
		}
		label := strings.TrimSpace(d.Label)
		if label == "" {
			return nil, int(dec.InputOffset()), false, tensor.Errorf(ErrSyntax, "detections", tensor.At(k), "missing \"label\"")
		}
		out[k] = Detection{Label: label, Box: Box(coords)}
	}
	return out, int(dec.InputOffset()), false, nil
}

// DetectionConfig holds the constants of V-Triune's multi-box score.
type DetectionConfig struct {
	// Threshold is the IoU a match needs (≥), in (0, 1]; the Dynamic IoU
	// schedule sets it during training.
	Threshold float64
	// Completeness is c in meanIoU·(1−c) + completeness·c, in [0, 1].
	Completeness float64
	// CountPenalty is the base of the factor CountPenalty^|#pred − #gt|, in
	// (0, 1].
	CountPenalty float64
	// Optimal matches by maximum total IoU (Hungarian) instead of the greedy
	// ground-truth-order matching.
	Optimal bool
}

// DefaultDetectionConfig returns V-Triune's constants: threshold 0.5 (the
// start of its adaptive schedule; pass DynamicIoU(progress) in training),
// c = 0.3, penalty 0.6, greedy matching.
func DefaultDetectionConfig() DetectionConfig {
	return DetectionConfig{Threshold: 0.5, Completeness: 0.3, CountPenalty: 0.6}
}

// Validate reports the first field of c out of its domain.
func (c DetectionConfig) Validate() error {
	switch {
	case !(c.Threshold > 0 && c.Threshold <= 1):
		return tensor.Errorf(tensor.ErrRange, "DetectionConfig.Threshold", nil, "%v, want in (0, 1]", c.Threshold)
	case !(c.Completeness >= 0 && c.Completeness <= 1):
		return tensor.Errorf(tensor.ErrRange, "DetectionConfig.Completeness", nil, "%v, want in [0, 1]", c.Completeness)
	case !(c.CountPenalty > 0 && c.CountPenalty <= 1):
		return tensor.Errorf(tensor.ErrRange, "DetectionConfig.CountPenalty", nil, "%v, want in (0, 1]", c.CountPenalty)
	}
	return nil
}

// DetectionScore is the breakdown of a multi-box score.
type DetectionScore struct {
	// Score = (MeanIoU·(1−c) + Completeness·c)·Penalty, in [0, 1].
	Score float64
	// MeanIoU is the mean IoU of the matched pairs, 0 without matches.
	MeanIoU float64
	// Completeness = 1 − (MissRate + FalseAlarmRate)/2.
	Completeness float64
	// MissRate is the share of ground-truth boxes left unmatched, 0 when
	// there are none; FalseAlarmRate the share of predictions left
	// unmatched, 0 when there are none.
	MissRate, FalseAlarmRate float64
	// Penalty = CountPenalty^|#pred − #gt|.
	Penalty float64
	// Matched is the number of matched pairs; Match[j] is the prediction
	// matched to ground-truth box j, or −1.
	Matched int
	Match   []int
}

// sameLabel compares labels without regard to case.
func sameLabel(a, b string) bool { return strings.EqualFold(a, b) }

// ScoreDetections scores predicted boxes against ground truth by V-Triune's
// DetectionVerifier rule. Matching is label-first: a prediction can match a
// ground-truth box only if their labels agree (case-insensitively) and
// their IoU reaches the threshold. Greedy matching takes the ground-truth
// boxes in order and gives each the unmatched prediction of its label with
// the highest IoU (the earliest on ties); optimal matching maximises the
// total IoU of the matched pairs instead. Then
//
//	score = (meanIoU·(1−c) + (1 − (miss + falseAlarm)/2)·c) · penalty^|#pred − #gt|
//
// Both lists empty score 1. An empty prediction against non-empty ground
// truth scores c/2·penalty^#gt, as the formula gives (miss 1, false alarm 0).
// Ground-truth boxes must be valid; invalid predicted boxes match nothing.
func ScoreDetections(gt, pred []Detection, cfg DetectionConfig) (DetectionScore, error) {
	r0, err := scoreDetections(gt, pred, cfg)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func scoreDetections(gt, pred []Detection, cfg DetectionConfig) (DetectionScore, error) {
	if err := cfg.Validate(); err != nil {
		return DetectionScore{}, err
	}
	if len(gt) > MaxBoxes {
		return DetectionScore{}, tensor.Errorf(ErrTooLarge, "gt", nil, "%d boxes, limit %d", len(gt), MaxBoxes)
	}
	if len(pred) > MaxBoxes {
		return DetectionScore{}, tensor.Errorf(ErrTooLarge, "pred", nil, "%d boxes, limit %d", len(pred), MaxBoxes)
	}
	for j, g := range gt {
		if !g.Box.Valid() || g.Box.Area() <= 0 {
			return DetectionScore{}, tensor.Errorf(tensor.ErrRange, "gt", tensor.At(j), "box %v is empty, unordered or not finite", g.Box)
		}
	}
	ds := DetectionScore{Match: make([]int, len(gt)), Penalty: 1}
	for j := range ds.Match {
		ds.Match[j] = -1
	}
	if len(gt) == 0 && len(pred) == 0 {
		ds.Score, ds.MeanIoU, ds.Completeness = 1, 1, 1
		return ds, nil
	}
	iou := make([]float64, len(gt)*len(pred))
	for j, g := range gt {
		for i, p := range pred {
			if sameLabel(g.Label, p.Label) {
				if v := IoU(g.Box, p.Box); v >= cfg.Threshold {
					iou[j*len(pred)+i] = v
				}
			}
		}
	}
	if cfg.Optimal {
		matchOptimal(ds.Match, iou, len(gt), len(pred))
	} else {
		matchGreedy(ds.Match, iou, len(pred))
	}
	var sum float64
	for j, i := range ds.Match {
		if i >= 0 {
			ds.Matched++
			sum += iou[j*len(pred)+i]
		}
	}
	if ds.Matched > 0 {
		ds.MeanIoU = sum / float64(ds.Matched)
	}
	if len(gt) > 0 {
		ds.MissRate = float64(len(gt)-ds.Matched) / float64(len(gt))
	}
	if len(pred) > 0 {
		ds.FalseAlarmRate = float64(len(pred)-ds.Matched) / float64(len(pred))
	}
	ds.Completeness = 1 - (ds.MissRate+ds.FalseAlarmRate)/2
	ds.Penalty = math.Pow(cfg.CountPenalty, math.Abs(float64(len(pred)-len(gt))))
	c := cfg.Completeness
	ds.Score = clamp01((ds.MeanIoU*(1-c) + ds.Completeness*c) * ds.Penalty)
	return ds, nil
}

// matchGreedy fills match[j] for each ground-truth row j of the n-column
// IoU matrix (0 = not allowed) in order, with the highest unused column.
func matchGreedy(match []int, iou []float64, n int) {
	used := make([]bool, n)
	for j := range match {
		best, bestIoU := -1, 0.0
		for i, v := range iou[j*n : (j+1)*n] {
			if !used[i] && v > bestIoU {
				best, bestIoU = i, v
			}
		}
		if best >= 0 {
			used[best] = true
			match[j] = best
		}
	}
}

// matchOptimal fills match with the assignment of maximum total IoU; pairs
// that are not allowed (IoU 0 in the matrix) are left unmatched. Every
// allowed pair has IoU ≥ threshold > 0, so maximising the total over a
// complete assignment with 0 for forbidden pairs and then dropping them
// gives a maximum-weight matching.
func matchOptimal(match []int, iou []float64, m, n int) {
	if m == 0 || n == 0 {
		return
	}
	cost := make([][]float64, m)
	for j := range cost {
		row := make([]float64, n)
		for i := range row {
			row[i] = -iou[j*n+i]
		}
		cost[j] = row
	}
	// Assign cannot fail here: the matrix is rectangular and finite.
	if _, err := assign(match, cost); err != nil {
		panic("verifiers: " + err.Error())
	}
	for j, i := range match {
		if i >= 0 && iou[j*n+i] == 0 {
			match[j] = -1
		}
	}
}

// DetectionVerifier scores a multi-object answer with ScoreDetections: ref
// and the extracted answer are read by ParseDetections. Correct means every
// ground-truth box is matched and nothing else is predicted. A prediction
// that does not parse scores 0.
//
// The answer is read under the slot rule (docs/spec.md#answer-slot): the
// last ``` fence of the answer region when there is one (brackets in the
// reasoning before it are not read), else its box group, answer phrase or
// the whole region; it must hold exactly one JSON list (or object) of
// detections — several different ones, or a retraction after it, score 0
// with a Reason.
//
// Parameters: "extract" (default "slot"; "auto", the first JSON value of
// the last <answer> or of the whole text, is the reading of earlier
// releases); "threshold" in (0, 1] (default
// 0.5) or "progress" in [0, 1] (Dynamic IoU); "matching": "greedy"
// (default) or "optimal"; "completeness" c (default 0.3);
// "count_penalty" (default 0.6).
func DetectionVerifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return detectionRule.verify(ctx, response, reference, p)
}

var detectionRule = rule{
	name: "detection", extract: ExtractSlot, region: true, shape: shapeStructured,
	has:    func(s string) bool { d, _, _ := detectionCandidates(s); return len(d) > 0 },
	params: []string{"threshold", "progress", "matching", "completeness", "count_penalty"},
	read: func(p Params, c *config) (err error) {
		c.detection, err = detectionParams(p)
		return err
	},
	score: scoreDetection,
}

func scoreDetection(ctx context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	cfg := c.detection
	gt, err := parseDetections(ref)
	if err != nil {
		return Result{}, renameArg(err, "ref")
	}
	for j, g := range gt {
		if !g.Box.Valid() || g.Box.Area() <= 0 {
			return Result{}, tensor.Errorf(ErrSyntax, "ref", tensor.At(j), "box %v is empty, unordered or not finite", g.Box)
		}
	}
	if !found {
		return Result{}, nil
	}
	var got []Detection
	if c.extract == ExtractSlot {
		// The slot rule: exactly one list of detections, nothing after it
		// withdrawing it.
		lists, end, err := detectionCandidates(ans)
		switch {
		case len(lists) == 0 && err != nil:
			return Result{Reason: "no detections: " + clip(err.Error())}, nil
		case len(lists) == 0:
			return Result{Reason: reasonNone}, nil
		case len(lists) > 1:
			return Result{Reason: reasonSeveral}, nil
		case slot.Retracts(ans[end:]):
			return Result{Reason: slot.ReasonRetracted}, nil
		}
		got = lists[0]
	} else {
		got, err = parseDetections(ans)
		if err != nil {
			return Result{Reason: "no detections: " + clip(err.Error())}, nil
		}
	}
	// Parsing is the linear part; the matching after it is bounded by
	// MaxBoxes. The deadline is checked between them.
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	ds, err := scoreDetections(gt, got, cfg)
	if err != nil {
		return Result{}, err
	}
	return Result{
		Score:   ds.Score,
		Correct: ds.MissRate == 0 && ds.FalseAlarmRate == 0,
		Parsed:  formatDetections(got),
	}, nil
}

func detectionParams(p Params) (DetectionConfig, error) {
	cfg := DefaultDetectionConfig()
	var err error
	if cfg.Threshold, err = iouThreshold(p, cfg.Threshold, false); err != nil {
		return cfg, err
	}
	m, err := p.Enum("matching", "greedy", "greedy", "optimal")
	if err != nil {
		return cfg, err
	}
	cfg.Optimal = m == "optimal"
	if cfg.Completeness, err = p.Float("completeness", cfg.Completeness); err != nil {
		return cfg, err
	}
	if cfg.Completeness < 0 || cfg.Completeness > 1 {
		return cfg, paramErr("completeness", "%v, want in [0, 1]", cfg.Completeness)
	}
	if cfg.CountPenalty, err = p.Float("count_penalty", cfg.CountPenalty); err != nil {
		return cfg, err
	}
	if cfg.CountPenalty <= 0 || cfg.CountPenalty > 1 {
		return cfg, paramErr("count_penalty", "%v, want in (0, 1]", cfg.CountPenalty)
	}
	return cfg, nil
}

// formatDetections writes ds back as compact JSON.
func formatDetections(ds []Detection) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for k, d := range ds {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"label":`)
		label, _ := json.Marshal(d.Label) // a string always marshals
		b.Write(label)
		b.WriteString(`,"bbox":`)
		b.WriteString(d.Box.String())
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

// renameArg re-labels an *ArgError for the verifier's argument name.
func renameArg(err error, arg string) error {
	if ae, ok := err.(*tensor.ArgError); ok {
		c := *ae
		c.Arg = arg
		return &c
	}
	return err
}

// detectionCandidates returns the distinct lists of detections written in
// s: each JSON array or object, from a '[' or '{' outside those already
// read, that parseDetections reads (at most maxJSONTries are tried), the
// end of the last one, and the first parse error when none reads.
func detectionCandidates(s string) (lists [][]Detection, end int, firstErr error) {
	var seen []string
	tries, scanned := 0, 0
	for i := 0; i < len(s) && tries < maxJSONTries && scanned <= 2*len(s); i++ {
		if s[i] != '[' && s[i] != '{' {
			continue
		}
		tries++
		ds, n, open, err := decodeDetectionsOpen(s[i:])
		scanned += n
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			if n > 0 && !open {
				i += n - 1 // a whole JSON value that is not a detection list
			}
			if open {
				// A value left open to the end of the answer: any later
				// start lies inside it. One such scan of the rest is
				// all that is tried.
				break
			}
			continue
		}
		end = i + n
		if key := formatDetections(ds); !slicesContains(seen, key) {
			seen = append(seen, key)
			lists = append(lists, ds)
		}
		i = end - 1
	}
	return lists, end, firstErr
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
