package replay

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// CurriculumPoint fixes the tier weights at one point of training.
type CurriculumPoint struct {
	// Progress is the fraction of training done, in [0, 1].
	Progress float64
	// Weights are the sampling weights there; they may not all be 0.
	Weights TierWeights
}

// Curriculum schedules the tier sampling weights over training progress:
// piecewise linear between its points, constant before the first and after
// the last. AVATAR describes the schedule only qualitatively — the replay
// "transitions from easy to hard samples" (§B, RQ7) — so the numbers of
// DefaultCurriculum are this package's.
type Curriculum struct {
	// Points, in increasing order of Progress; at least one.
	Points []CurriculumPoint
}

// LinearCurriculum moves the weights linearly from start at progress 0 to
// end at progress 1.
func LinearCurriculum(start, end TierWeights) Curriculum {
	return Curriculum{Points: []CurriculumPoint{{0, start}, {1, end}}}
}

// DefaultCurriculum is easy-heavy early and hard-heavy late: Easy 0.5,
// Medium 0.35, Hard 0.15 at the start to Easy 0.15, Medium 0.35, Hard 0.5
// at the end.
func DefaultCurriculum() Curriculum {
	return LinearCurriculum(
		TierWeights{Easy: 0.5, Medium: 0.35, Hard: 0.15},
		TierWeights{Easy: 0.15, Medium: 0.35, Hard: 0.5},
	)
}

// Validate reports the first point that is out of order or has invalid
// weights.
func (c Curriculum) Validate() error {
	if len(c.Points) == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "Curriculum.Points", nil, "no point; start from replay.DefaultCurriculum() or replay.LinearCurriculum")
	}
	for i, p := range c.Points {
		if !(p.Progress >= 0 && p.Progress <= 1) {
			return tensor.Errorf(tensor.ErrRange, "Curriculum.Points", tensor.At(i), "progress %v, want a number in [0, 1]", p.Progress)
		}
		if i > 0 && !(p.Progress > c.Points[i-1].Progress) {
			return tensor.Errorf(tensor.ErrRange, "Curriculum.Points", tensor.At(i), "progress %v after %v, want increasing", p.Progress, c.Points[i-1].Progress)
		}
		if err := p.Weights.Validate(); err != nil {
			return tensor.Errorf(tensor.ErrRange, "Curriculum.Points", tensor.At(i), "%v", err)
		}
		if p.Weights.sum() == 0 {
			return tensor.Errorf(tensor.ErrRange, "Curriculum.Points", tensor.At(i), "all weights are 0")
		}
	}
	return nil
}

// Weights returns the tier weights at progress (clamped to the schedule's
// ends), to pass to Sample in SampleOptions.Weights.
func (c Curriculum) Weights(progress float64) (TierWeights, error) {
	if math.IsNaN(progress) {
		return TierWeights{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrNonFinite, "progress", nil, "NaN"))
	}
	if err := c.Validate(); err != nil {
		return TierWeights{}, fmt.Errorf("replay: %w", err)
	}
	ps := c.Points
	if progress <= ps[0].Progress {
		return ps[0].Weights, nil
	}
	for i := 1; i < len(ps); i++ {
		if progress < ps[i].Progress {
			a, b := ps[i-1], ps[i]
			f := (progress - a.Progress) / (b.Progress - a.Progress)
			var w TierWeights
			for t := range w {
				w[t] = a.Weights[t] + f*(b.Weights[t]-a.Weights[t])
			}
			return w, nil
		}
	}
	return ps[len(ps)-1].Weights, nil
}
