package stat

import (
	"math"
	"testing"
)

func TestMoments(t *testing.T) {
	for _, c := range []struct {
		x        []float64
		mean, ss float64
	}{
		{[]float64{3}, 3, 0},
		{[]float64{1, 2, 3, 4, 5}, 3, 10},
		{[]float64{2, 2, 2, 2, 2, 2, 2}, 2, 0},
		{[]float64{-1, 1, -1, 1, -1, 1, -1, 1, 10}, 10.0 / 9, 100 - 100.0/9 + 8},
	} {
		mean, ss := Moments(c.x)
		if math.Abs(mean-c.mean) > 1e-12 || math.Abs(ss-c.ss) > 1e-9 {
			t.Errorf("Moments(%v) = %v, %v, want %v, %v", c.x, mean, ss, c.mean, c.ss)
		}
	}
	if mean, _ := Moments([]float32{1, float32(math.NaN())}); !math.IsNaN(mean) {
		t.Error("a NaN does not show in the mean")
	}
}
