package verifiers

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Helpers of the verifiers that reproduce the papers' rewards
// (temporal_iou, think_boxed_format, vagen_format, structured_f1). Their
// input preamble is the package's checkInputs, like every built-in's.

// paperParamErr is an ErrParam error naming the parameter.
func paperParamErr(key, format string, a ...any) error {
	return tensor.Errorf(ErrParam, fmt.Sprintf("params[%q]", key), nil, format, a...)
}

// paperUnit keeps rounding from pushing a score out of [0, 1].
func paperUnit(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(max(x, 0), 1)
}
