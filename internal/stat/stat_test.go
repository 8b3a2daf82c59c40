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

// TestCombine: the summaries of pieces, combined, give the moments of the
// whole sample; empty pieces add nothing.
func TestCombine(t *testing.T) {
	x := make([]float64, 1000)
	for i := range x {
		x[i] = float64((i*7919)%101)/7 - 3
	}
	mean, ss := Moments(x)
	for _, cut := range [][]int{{0, 1000}, {0, 1, 999, 1000}, {0, 10, 10, 500, 733, 1000}} {
		var parts []Summary
		for p := 0; p+1 < len(cut); p++ {
			piece := x[cut[p]:cut[p+1]]
			if len(piece) == 0 {
				parts = append(parts, Summary{})
				continue
			}
			m, s := Moments(piece)
			parts = append(parts, Summary{W: float64(len(piece)), Mean: m, M2: s})
		}
		got := Combine(parts)
		if got.W != 1000 || math.Abs(got.Mean-mean) > 1e-13 || math.Abs(got.M2-ss)/ss > 1e-13 {
			t.Errorf("cut %v: Combine = %+v, want W 1000, mean %v, M2 %v", cut, got, mean, ss)
		}
	}
	// Weighted: a piece of weight 3 is three copies of its value.
	got := Combine([]Summary{{W: 3, Mean: 2}, {W: 1, Mean: 6}})
	if got.W != 4 || got.Mean != 3 || got.M2 != 3*1+9 {
		t.Errorf("weighted Combine = %+v, want {4 3 12}", got)
	}
	if got := Combine([]Summary{{}, {}}); got != (Summary{}) {
		t.Errorf("Combine of empty pieces = %+v, want the zero Summary", got)
	}
}
