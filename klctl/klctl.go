package klctl

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Verl's defaults (algorithm.kl_ctrl): a fixed β = 0.001; for the adaptive
// controller a target KL of 0.1 and a horizon of 10000 responses.
const (
	DefaultCoef    = 0.001
	DefaultTarget  = 0.1
	DefaultHorizon = 10000
)

// ClipError bounds the proportional error e_t (Ziegler et al. §2.2).
const ClipError = 0.2

// Controller holds β. The zero value is a fixed controller with β = 0 (no
// penalty); Fixed and Adaptive make the others.
type Controller struct {
	value    float64
	target   float64
	horizon  float64
	adaptive bool
}

// Fixed returns a controller whose β stays beta (verl kl_ctrl.type
// "fixed").
func Fixed(beta float64) (Controller, error) {
	if err := coef(beta); err != nil {
		return Controller{}, err
	}
	return Controller{value: beta}, nil
}

// Adaptive returns a controller that starts at beta and moves it towards
// KL = target over horizon responses (verl kl_ctrl.type "adaptive",
// kl_coef, target_kl, horizon).
func Adaptive(beta, target float64, horizon int) (Controller, error) {
	if err := coef(beta); err != nil {
		return Controller{}, err
	}
	if !(target > 0) || math.IsInf(target, 1) {
		return Controller{}, fmt.Errorf("klctl: %w", tensor.Errorf(tensor.ErrRange, "target", nil, "%v, want a finite number > 0", target))
	}
	if horizon < 1 {
		return Controller{}, fmt.Errorf("klctl: %w", tensor.Errorf(tensor.ErrRange, "horizon", nil, "%d, want ≥ 1", horizon))
	}
	return Controller{value: beta, target: target, horizon: float64(horizon), adaptive: true}, nil
}

func coef(beta float64) error {
	if !(beta >= 0) || math.IsInf(beta, 1) {
		return fmt.Errorf("klctl: %w", tensor.Errorf(tensor.ErrRange, "beta", nil, "%v, want a finite number ≥ 0", beta))
	}
	return nil
}

// Value returns the current β.
func (c *Controller) Value() float64 { return c.value }

// Adaptive reports whether Update moves β.
func (c *Controller) Adaptive() bool { return c.adaptive }

// Update records that a step of nSteps responses measured KL = kl (any
// finite number: k1 estimates may be negative) and, for an adaptive
// controller, moves β by the factor 1 + clip(kl/target − 1, ±0.2)·nSteps/H.
// A fixed controller checks its arguments and keeps β. It returns the new β.
func (c *Controller) Update(kl float64, nSteps int) (float64, error) {
	if !tensor.IsFinite(kl) {
		return c.value, fmt.Errorf("klctl: %w", tensor.Errorf(tensor.ErrNonFinite, "kl", nil, "%v", kl))
	}
	if nSteps < 0 {
		return c.value, fmt.Errorf("klctl: %w", tensor.Errorf(tensor.ErrRange, "nSteps", nil, "%d, want ≥ 0", nSteps))
	}
	if !c.adaptive {
		return c.value, nil
	}
	e := min(max(kl/c.target-1, -ClipError), ClipError)
	// With nSteps > horizon/0.2 the factor could reach 0 or below; β stays
	// ≥ 0 (a penalty never turns into a bonus).
	c.value = max(c.value*(1+e*float64(nSteps)/c.horizon), 0)
	return c.value, nil
}
