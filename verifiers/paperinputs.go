package verifiers

import (
	"context"
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// The helpers of the verifiers that reproduce the papers' rewards
// (temporal_iou, think_boxed_format, vagen_format, structured_f1). They
// repeat the package's common preamble on purpose, so that these files
// depend only on the package's exported contract.

// checkPaperInputs rejects a cancelled context and inputs over
// MaxInputBytes.
func checkPaperInputs(ctx context.Context, pred, ref string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(pred) > MaxInputBytes {
		return tensor.Errorf(ErrTooLarge, "pred", nil, "%d bytes, limit %d", len(pred), MaxInputBytes)
	}
	if len(ref) > MaxInputBytes {
		return tensor.Errorf(ErrTooLarge, "ref", nil, "%d bytes, limit %d", len(ref), MaxInputBytes)
	}
	return nil
}

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
