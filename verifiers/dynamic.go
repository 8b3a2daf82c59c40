package verifiers

import (
	"fmt"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

// IoUSchedule is a staged IoU threshold over training progress p ∈ [0, 1]:
// Thresholds[k] applies while p ≤ Until[k], the last threshold after the
// last boundary (V-Triune §3.2.1, §4.5).
type IoUSchedule struct {
	Until      []float64
	Thresholds []float64
}

// DynamicIoUSchedule is V-Triune's main schedule: 0.85 over the first 10%
// of training, 0.95 over the next 15%, 0.99 after.
func DynamicIoUSchedule() IoUSchedule {
	return IoUSchedule{Until: []float64{0.10, 0.25}, Thresholds: []float64{0.85, 0.95, 0.99}}
}

// LooseIoUSchedule and StrictIoUSchedule are the alternatives of V-Triune
// §4.5 (0.7 → 0.8 → 0.85 and 0.9 → 0.95 → 0.99 at the same boundaries);
// both did worse there.
func LooseIoUSchedule() IoUSchedule {
	return IoUSchedule{Until: []float64{0.10, 0.25}, Thresholds: []float64{0.7, 0.8, 0.85}}
}

// StrictIoUSchedule: see LooseIoUSchedule.
func StrictIoUSchedule() IoUSchedule {
	return IoUSchedule{Until: []float64{0.10, 0.25}, Thresholds: []float64{0.9, 0.95, 0.99}}
}

// Validate checks that s has one more threshold than boundaries, increasing
// boundaries in [0, 1] and thresholds in (0, 1].
func (s IoUSchedule) Validate() error {
	if len(s.Thresholds) != len(s.Until)+1 {
		return tensor.Errorf(tensor.ErrShape, "IoUSchedule.Thresholds", nil, "%d thresholds for %d boundaries, want %d", len(s.Thresholds), len(s.Until), len(s.Until)+1)
	}
	for k, u := range s.Until {
		if !(u >= 0 && u <= 1) || k > 0 && !(u > s.Until[k-1]) {
			return tensor.Errorf(tensor.ErrRange, "IoUSchedule.Until", tensor.At(k), "%v, want increasing values in [0, 1]", u)
		}
	}
	for k, t := range s.Thresholds {
		if !(t > 0 && t <= 1) {
			return tensor.Errorf(tensor.ErrRange, "IoUSchedule.Thresholds", tensor.At(k), "%v, want in (0, 1]", t)
		}
	}
	return nil
}

// At returns the threshold at training progress p ∈ [0, 1] (the current
// step over the total).
func (s IoUSchedule) At(p float64) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, fmt.Errorf("verifiers: %w", err)
	}
	if !(p >= 0 && p <= 1) {
		return 0, fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrRange, "p", nil, "%v, want a training progress in [0, 1]", p))
	}
	for k, u := range s.Until {
		if p <= u {
			return s.Thresholds[k], nil
		}
	}
	return s.Thresholds[len(s.Thresholds)-1], nil
}

// DynamicIoU returns V-Triune's Dynamic IoU threshold at training progress
// p ∈ [0, 1]: 0.85 for p ≤ 0.10, 0.95 for p ≤ 0.25, 0.99 after.
func DynamicIoU(p float64) (float64, error) {
	return DynamicIoUSchedule().At(p)
}

// AdaptiveLevels are the thresholds of V-Triune's adaptive controller
// (Appendix J): 0.5, 0.55, …, 0.95, 0.99.
var AdaptiveLevels = [...]float64{0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99}

// AdaptiveIoU is V-Triune's adaptive IoU threshold controller (Appendix J,
// Eq. 6). It starts at 0.5 and, after each batch, moves one level up when
// the batch success rate exceeds the target τ, one level down when it falls
// below, and stays otherwise; the ends of AdaptiveLevels hold. The paper
// found τ = 0.9 plateaus near 0.85 and τ ≤ 0.7 reaches 0.99 too early, and
// kept the fixed schedule. An AdaptiveIoU is safe for concurrent use.
type AdaptiveIoU struct {
	mu    sync.Mutex
	tau   float64
	level int
}

// NewAdaptiveIoU returns a controller with target success rate tau in
// [0, 1], at threshold 0.5.
func NewAdaptiveIoU(tau float64) (*AdaptiveIoU, error) {
	r0, err := newAdaptiveIoU(tau)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func newAdaptiveIoU(tau float64) (*AdaptiveIoU, error) {
	if !(tau >= 0 && tau <= 1) {
		return nil, tensor.Errorf(tensor.ErrRange, "tau", nil, "%v, want a success rate in [0, 1]", tau)
	}
	return &AdaptiveIoU{tau: tau}, nil
}

// Threshold returns the current threshold T_t.
func (a *AdaptiveIoU) Threshold() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdaptiveLevels[a.level]
}

// Step applies Eq. 6 for a batch success rate bsr ∈ [0, 1] and returns the
// next threshold T_{t+1}.
func (a *AdaptiveIoU) Step(bsr float64) (float64, error) {
	if !(bsr >= 0 && bsr <= 1) {
		return 0, fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrRange, "bsr", nil, "%v, want a rate in [0, 1]", bsr))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.step(bsr), nil
}

func (a *AdaptiveIoU) step(bsr float64) float64 {
	switch {
	case bsr > a.tau && a.level < len(AdaptiveLevels)-1:
		a.level++
	case bsr < a.tau && a.level > 0:
		a.level--
	}
	return AdaptiveLevels[a.level]
}

// Observe computes the batch success rate of the IoUs of a batch's
// predicted boxes, the share whose IoU exceeds the current threshold, and
// applies Step with it.
func (a *AdaptiveIoU) Observe(ious []float64) (float64, error) {
	if len(ious) == 0 {
		return 0, fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrEmpty, "ious", nil, "no boxes in the batch"))
	}
	for i, v := range ious {
		if !(v >= 0 && v <= 1) {
			return 0, fmt.Errorf("verifiers: %w", tensor.Errorf(tensor.ErrRange, "ious", tensor.At(i), "%v, want an IoU in [0, 1]", v))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := AdaptiveLevels[a.level]
	hits := 0
	for _, v := range ious {
		if v > t {
			hits++
		}
	}
	return a.step(float64(hits) / float64(len(ious))), nil
}
