package rewards

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Term is one weighted component of a composite reward.
type Term struct {
	Name   string
	Weight float64
}

// Composite is a weighted sum of named reward components, Σ w_k·r_k
// (AVATAR Table 1). Values are passed in the order of the terms.
type Composite []Term

// AVATARStage1 is AVATAR's stage S1 (visual reasoning, Video-R1):
// 0.5·format + 0.5·acc.
func AVATARStage1() Composite { return Composite{{"format", 0.5}, {"acc", 0.5}} }

// AVATARStage2 is stage S2 (audio-visual reasoning, AVQA and AVE):
// 0.2·format + 0.4·acc + 0.4·self.
func AVATARStage2() Composite { return Composite{{"format", 0.2}, {"acc", 0.4}, {"self", 0.4}} }

// AVATARStage3 is stage S3 (audio-object localisation, AVSBench):
// 0.2·format + 0.4·acc + 0.4·judge.
func AVATARStage3() Composite { return Composite{{"format", 0.2}, {"acc", 0.4}, {"judge", 0.4}} }

// Validate reports an empty composite, an empty or repeated name, or a
// weight that is not finite.
func (c Composite) Validate() error {
	if len(c) == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "Composite", nil, "no terms")
	}
	for k, t := range c {
		if t.Name == "" {
			return tensor.Errorf(tensor.ErrRange, "Composite", tensor.At(k), "term without a name")
		}
		if math.IsNaN(t.Weight) || math.IsInf(t.Weight, 0) {
			return tensor.Errorf(tensor.ErrNonFinite, "Composite", tensor.At(k), "weight of %q is %v", t.Name, t.Weight)
		}
		for _, u := range c[:k] {
			if u.Name == t.Name {
				return tensor.Errorf(tensor.ErrRange, "Composite", tensor.At(k), "%q appears twice", t.Name)
			}
		}
	}
	return nil
}

// Combine returns Σ w_k·values[k], one value per term in order.
func (c Composite) Combine(values ...float64) (float64, error) {
	if err := c.Validate(); err != nil {
		return 0, fmt.Errorf("rewards: %w", err)
	}
	if len(values) != len(c) {
		return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "values", nil, "%d values for %d terms (%s)", len(values), len(c), c.names()))
	}
	var r float64
	for k, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrNonFinite, "values", tensor.At(k), "%s = %v", c[k].Name, v))
		}
		r += c[k].Weight * v
	}
	return r, nil
}

// CombineNamed returns Σ w_k·values[name_k]; every term must have a value
// and every value a term.
func (c Composite) CombineNamed(values map[string]float64) (float64, error) {
	if err := c.Validate(); err != nil {
		return 0, fmt.Errorf("rewards: %w", err)
	}
	vs := make([]float64, len(c))
	for k, t := range c {
		v, ok := values[t.Name]
		if !ok {
			return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "values", nil, "no value for %q", t.Name))
		}
		vs[k] = v
	}
	if len(values) != len(c) {
		for name := range values {
			if !c.has(name) {
				return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "values", nil, "%q is not a term (%s)", name, c.names()))
			}
		}
	}
	return c.Combine(vs...)
}

func (c Composite) has(name string) bool {
	for _, t := range c {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (c Composite) names() string {
	s := ""
	for k, t := range c {
		if k > 0 {
			s += ", "
		}
		s += t.Name
	}
	return s
}
