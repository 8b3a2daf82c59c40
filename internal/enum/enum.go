// Package enum is the one home of the name tables behind the String and
// Parse… functions of the math packages' enumerations (ppo.Aggregation,
// grpo.Estimator, tas.Curve, appo.Strategy, …): a table indexed by the
// enumeration's value, so a value and its name are written once, and one
// error for an unknown name, a *tensor.ArgError of kind tensor.ErrRange.
package enum

import (
	"fmt"

	"github.com/rlpost/rlpost/tensor"
)

// Name returns names[v], or typ(v) (e.g. "Aggregation(9)") when v is
// outside the table.
func Name(names []string, v int, typ string) string {
	if v < 0 || v >= len(names) {
		return fmt.Sprintf("%s(%d)", typ, v)
	}
	return names[v]
}

// Parse returns the index of s in names. An unknown s is an error of
// package pkg about argument arg (the request field that names it, e.g.
// "loss_mode") that lists the names accepted.
func Parse(names []string, s, pkg, arg string) (int, error) {
	for i, n := range names {
		if n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", pkg, tensor.Errorf(tensor.ErrRange, arg, nil, "unknown %q (want one of %q)", s, names))
}
