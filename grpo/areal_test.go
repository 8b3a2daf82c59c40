package grpo_test

import (
	"errors"
	"math"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
)

// LLaVA-OneVision-1.5's worked example: rewards 1, 1, 1, 0.5, 0 for "What is
// 12 × 8?", printed as mean 0.70, std 0.41.
func TestAReaLAdvantagesWorkedExample(t *testing.T) {
	rewards := []float64{1, 1, 1, 0.5, 0}
	adv := make([]float64, 5)
	_, err := grpo.Advantages(adv, rewards, grpo.Contiguous(5), grpo.AReaLAdvantages())
	if err != nil {
		t.Fatal(err)
	}
	// Population std 0.4 (the example's 0.41, rounded up); unbiased would be
	// 0.447, 0.037 away.
	const mean, std = 0.7, 0.4
	for i, r := range rewards {
		want := (r - mean) / (std + 1e-6)
		if math.Abs(adv[i]-want) > 1e-12 {
			t.Errorf("A[%d] = %v, want %v", i, adv[i], want)
		}
	}
	// The printed advantages +0.73 and −1.71 (÷0.41) are within 0.05 of ours.
	if math.Abs(adv[0]-0.73) > 0.03 || math.Abs(adv[4]+1.71) > 0.05 {
		t.Errorf("A = %v, far from the write-up's +0.73 … −1.71", adv)
	}
	if math.Abs(std-0.41) > 0.011 {
		t.Error("population std is not within rounding of the printed 0.41")
	}
}

func TestFresh(t *testing.T) {
	for _, c := range []struct {
		current, version, eta int64
		want                  bool
	}{
		{5, 1, grpo.AReaLMaxStaleness, true}, // the write-up's case: gap 4 ≤ η, accepted
		{6, 1, grpo.AReaLMaxStaleness, false},
		{3, 3, 0, true},
		{3, 2, 0, false},
	} {
		got, err := grpo.Fresh(c.current, c.version, c.eta)
		if err != nil || got != c.want {
			t.Errorf("Fresh(%d, %d, %d) = %v, %v; want %v", c.current, c.version, c.eta, got, err, c.want)
		}
	}
	for _, c := range []struct{ current, version, eta int64 }{{2, 3, 4}, {2, -1, 4}, {-1, 0, 4}, {2, 1, -1}} {
		if _, err := grpo.Fresh(c.current, c.version, c.eta); !errors.Is(err, tensor.ErrRange) {
			t.Errorf("Fresh(%d, %d, %d) error = %v, want ErrRange", c.current, c.version, c.eta, err)
		}
	}
}

func TestFilterStale(t *testing.T) {
	versions := []int64{10, 6, 5, 9, 0}
	keep := make([]bool, 5)
	n, err := grpo.FilterStale(keep, versions, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, false, true, false}
	if n != 3 {
		t.Errorf("kept %d, want 3", n)
	}
	for i := range want {
		if keep[i] != want[i] {
			t.Errorf("keep = %v, want %v", keep, want)
			break
		}
	}
	keep = []bool{true, true, true}
	if _, err := grpo.FilterStale(keep, []int64{1, 11, 2}, 10, 4); !errors.Is(err, tensor.ErrRange) {
		t.Errorf("a version from the future: %v, want ErrRange", err)
	} else if !keep[0] || !keep[2] {
		t.Error("keep changed on error")
	}
	if _, err := grpo.FilterStale(make([]bool, 2), versions, 10, 4); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("short keep: %v, want ErrShape", err)
	}
}
