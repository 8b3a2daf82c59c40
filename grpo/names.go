package grpo

import (
	"fmt"

	"github.com/rlpost/rlpost/tensor"
)

// The names of the enumerations, as `rlpost conform` spells them: verl's
// adv_estimator names for the estimators, the config values of
// docs/conformance.md for the rest. Each table is indexed by its
// enumeration, so a name and its value are defined once.
var (
	estimatorNames = [numEstimators]string{
		GRPO: "grpo", RLOO: "rloo",
		ReinforcePlusPlus: "reinforce_plus_plus", ReinforcePlusPlusBaseline: "reinforce_plus_plus_baseline",
		ReMax: "remax", OPO: "opo", GPG: "gpg", PassK: "grpo_passk",
	}
	scaleNames     = [...]string{ScaleGroup: "group", ScaleBatch: "batch", ScaleNone: "none"}
	stdNames       = [...]string{Unbiased: "unbiased", Population: "population"}
	singletonNames = [...]string{SingletonZero: "zero", SingletonReward: "reward"}
	gpgAlphaNames  = [...]string{GPGValid: "valid", GPGNonzero: "nonzero"}
)

func name(names []string, v int, typ string) string {
	if v < 0 || v >= len(names) {
		return fmt.Sprintf("%s(%d)", typ, v)
	}
	return names[v]
}

func parse(names []string, s, arg string) (int, error) {
	for i, n := range names {
		if n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrRange, arg, nil, "unknown %q (want one of %q)", s, names))
}

// String returns verl's adv_estimator name of e ("grpo", "rloo",
// "reinforce_plus_plus", …, "grpo_passk").
func (e Estimator) String() string { return name(estimatorNames[:], int(e), "Estimator") }

// String returns "group", "batch" or "none".
func (s Scale) String() string { return name(scaleNames[:], int(s), "Scale") }

// String returns "unbiased" or "population".
func (s Std) String() string { return name(stdNames[:], int(s), "Std") }

// String returns "zero" or "reward".
func (s Singleton) String() string { return name(singletonNames[:], int(s), "Singleton") }

// String returns "valid" or "nonzero".
func (a GPGAlpha) String() string { return name(gpgAlphaNames[:], int(a), "GPGAlpha") }

// ParseEstimator returns the Estimator with verl's adv_estimator name s; an
// unknown name is an *tensor.ArgError of kind tensor.ErrRange.
func ParseEstimator(s string) (Estimator, error) {
	i, err := parse(estimatorNames[:], s, "estimator")
	return Estimator(i), err
}

// ParseScale returns the Scale named s ("group", "batch" or "none").
func ParseScale(s string) (Scale, error) {
	i, err := parse(scaleNames[:], s, "scale")
	return Scale(i), err
}

// ParseStd returns the Std named s ("unbiased" or "population").
func ParseStd(s string) (Std, error) {
	i, err := parse(stdNames[:], s, "std")
	return Std(i), err
}

// ParseSingleton returns the Singleton named s ("zero" or "reward").
func ParseSingleton(s string) (Singleton, error) {
	i, err := parse(singletonNames[:], s, "singleton")
	return Singleton(i), err
}

// ParseGPGAlpha returns the GPGAlpha named s ("valid" or "nonzero").
func ParseGPGAlpha(s string) (GPGAlpha, error) {
	i, err := parse(gpgAlphaNames[:], s, "gpg_alpha")
	return GPGAlpha(i), err
}
