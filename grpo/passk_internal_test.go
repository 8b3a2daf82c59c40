package grpo

import (
	"math"
	"slices"
	"testing"
)

// TestOrderKey: orderKey orders numbers as < does, and fromOrderKey
// inverts it.
func TestOrderKey(t *testing.T) {
	x := []float64{math.Inf(-1), -math.MaxFloat64, -3.5, -1, -math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0,
		math.SmallestNonzeroFloat64, 1e-300, 0.25, 1, 3.5, math.MaxFloat64, math.Inf(1)}
	keys := make([]int64, len(x))
	for i, v := range x {
		keys[i] = orderKey(v)
		if back := fromOrderKey(keys[i]); math.Float64bits(back) != math.Float64bits(v) {
			t.Errorf("fromOrderKey(orderKey(%v)) = %v", v, back)
		}
	}
	if !slices.IsSorted(keys) {
		t.Errorf("keys of ascending numbers are not ascending: %v", keys)
	}
	if got := fromOrderKey(math.MinInt64); !math.IsInf(got, -1) {
		t.Errorf("fromOrderKey(MinInt64) = %v, want −Inf", got)
	}
}
