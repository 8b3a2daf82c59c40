package rewards

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// DefaultFixedIoUThreshold is the threshold of the fixed-threshold IoU
// diagnostic: 0.5, the IoU@50 V-Triune monitors while its training reward
// follows the Dynamic IoU schedule ("One RL to See Them All", §3.3
// "auxiliary diagnostics include fixed-threshold IoU"; §4.5 and Appendix
// J track IoU@50).
const DefaultFixedIoUThreshold = 0.5

// FixedIoU accumulates V-Triune's fixed-threshold IoU diagnostic per data
// source: the share of localisation answers whose raw IoU reaches a fixed
// threshold, and their mean raw IoU. The training reward zeroes IoUs below
// the current Dynamic IoU threshold, so its mean jumps when the schedule
// moves; this diagnostic does not, which is what makes progress comparable
// across the schedule's stages. Safe for concurrent use.
type FixedIoU struct {
	threshold float64
	mu        sync.Mutex
	per       map[string]*iouAcc
}

type iouAcc struct {
	n, hits int
	sum     float64
}

// FixedIoUStats are one source's fixed-threshold IoU statistics since the
// last reset.
type FixedIoUStats struct {
	Source string
	// Count is the number of answers recorded.
	Count int
	// HitRate is the share of answers with IoU ≥ the threshold (IoU@50 at
	// the default threshold).
	HitRate float64
	// MeanIoU is the mean raw IoU.
	MeanIoU float64
}

// NewFixedIoU returns an empty diagnostic at threshold ∈ (0, 1]; V-Triune
// uses DefaultFixedIoUThreshold.
func NewFixedIoU(threshold float64) (*FixedIoU, error) {
	if !(threshold > 0 && threshold <= 1) {
		return nil, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "threshold", nil, "%v, want a number in (0, 1]", threshold))
	}
	return &FixedIoU{threshold: threshold, per: make(map[string]*iouAcc)}, nil
}

// Threshold returns the diagnostic's threshold.
func (d *FixedIoU) Threshold() float64 { return d.threshold }

// Record adds raw IoUs (each in [0, 1]) of one source's answers. On error
// nothing is recorded.
func (d *FixedIoU) Record(source string, ious ...float64) error {
	for i, v := range ious {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "ious", tensor.At(i), "%v, want an IoU in [0, 1]", v))
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.per[source]
	if a == nil {
		a = &iouAcc{}
		d.per[source] = a
	}
	for _, v := range ious {
		a.n++
		a.sum += v
		if v >= d.threshold {
			a.hits++
		}
	}
	return nil
}

// RecordBox records the raw IoU of one box answer: the box of response's
// last <answer> block (or of the whole response without one) against the
// reference box, both read by verifiers.ParseBox. An answer without a
// valid box records IoU 0, a miss; a reference without one is an error
// wrapping verifiers.ErrSyntax.
func (d *FixedIoU) RecordBox(source, response, reference string) error {
	ref, ok := verifiers.ParseBox(reference)
	if !ok || !ref.Valid() {
		return fmt.Errorf("rewards: %w", tensor.Errorf(verifiers.ErrSyntax, "reference", nil, "no valid box [x1, y1, x2, y2]"))
	}
	ans := response
	if a, ok := verifiers.AnswerTag(response); ok {
		ans = a
	}
	iou := 0.0
	if b, ok := verifiers.ParseBox(ans); ok && b.Valid() {
		iou = verifiers.IoU(b, ref)
		if math.IsNaN(iou) {
			iou = 0
		}
		iou = min(max(iou, 0), 1)
	}
	return d.Record(source, iou)
}

// Snapshot returns the statistics of every source, by source name.
func (d *FixedIoU) Snapshot() []FixedIoUStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snapshot()
}

func (d *FixedIoU) snapshot() []FixedIoUStats {
	out := make([]FixedIoUStats, 0, len(d.per))
	for src, a := range d.per {
		s := FixedIoUStats{Source: src, Count: a.n}
		if a.n > 0 {
			s.HitRate, s.MeanIoU = float64(a.hits)/float64(a.n), a.sum/float64(a.n)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b FixedIoUStats) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// Flush returns the snapshot and resets, atomically.
func (d *FixedIoU) Flush() []FixedIoUStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.snapshot()
	clear(d.per)
	return s
}

// FixedIoUMetrics flattens stats for a logger, keys
// "<prefix>/<source>/fixed_iou_count", ".../fixed_iou_hit_rate" and
// ".../fixed_iou_mean".
func FixedIoUMetrics(prefix string, stats []FixedIoUStats) map[string]float64 {
	m := make(map[string]float64, 3*len(stats))
	for _, s := range stats {
		p := prefix + "/" + s.Source + "/"
		m[p+"fixed_iou_count"] = float64(s.Count)
		m[p+"fixed_iou_hit_rate"] = s.HitRate
		m[p+"fixed_iou_mean"] = s.MeanIoU
	}
	return m
}
