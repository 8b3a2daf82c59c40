package gae_test

import (
	"math"
	"slices"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

func TestTurnEnds(t *testing.T) {
	for _, c := range []struct {
		name       string
		mask, want []float64
	}{
		{"two turns with an observation between", []float64{0, 1, 1, 0, 0, 1, 1, 0}, []float64{0, 0, 1, 0, 0, 0, 1, 0}},
		{"turn reaching the end of the row", []float64{0, 1, 0, 1, 1}, []float64{0, 1, 0, 0, 1}},
		{"one-token turns", []float64{1, 0, 1, 0, 1}, []float64{1, 0, 1, 0, 1}},
		{"no valid token", []float64{0, 0, 0}, []float64{0, 0, 0}},
		{"all valid", []float64{1, 1, 1}, []float64{0, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mask := must(c.mask)
			dst := must(slices.Repeat([]float64{7}, len(c.mask)))
			if err := gae.TurnEnds(dst, mask); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dst.Data, c.want) {
				t.Errorf("TurnEnds(%v) = %v, want %v", c.mask, dst.Data, c.want)
			}
		})
	}
}

func TestPlaceTurnRewards(t *testing.T) {
	ends := must([]float64{0, 1, 0, 0, 1}, []float64{0, 0, 0, 0, 0}, []float64{1, 0, 0, 1, 0})
	dst := must(slices.Repeat([]float64{9}, 5), slices.Repeat([]float64{9}, 5), slices.Repeat([]float64{9}, 5))
	if err := gae.PlaceTurnRewards(dst, ends, must([]float64{0.5, 1}, []float64{7, 7}, []float64{-1, 2})); err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0.5, 0, 0, 1, 0, 0, 0, 0, 0, -1, 0, 0, 2, 0}
	if !slices.Equal(dst.Data, want) {
		t.Errorf("PlaceTurnRewards = %v, want %v", dst.Data, want)
	}
}

func TestAddKLPenalty(t *testing.T) {
	rewards := must([]float64{5, 0, 1, 0})
	kl := must([]float64{math.NaN(), 2, -1, 0.5})
	mask := must([]float64{0, 1, 1, 1})
	if err := gae.AddKLPenalty(rewards, kl, mask, 0.1); err != nil {
		t.Fatal(err)
	}
	golden := []float64{5, -0.2, 1.1, -0.05}
	for i, w := range golden {
		if math.Abs(rewards.Data[i]-w) > 1e-15 {
			t.Fatalf("rewards = %v, want %v", rewards.Data, golden)
		}
	}
	if gae.DefaultKLCoef != 0.001 {
		t.Errorf("DefaultKLCoef = %v, want VAGEN's 0.001", gae.DefaultKLCoef)
	}
}

// TestBuildAgentRewards runs the helpers the way a multi-turn trainer does
// (turn ends from the loss mask, turn rewards at the ends, the KL penalty
// on every generated token) and checks the rewards Bi-Level GAE then sees.
func TestBuildAgentRewards(t *testing.T) {
	mask := must([]float64{0, 1, 1, 1, 0, 0, 1, 1})
	ends := tensor.MustNew[float64](1, 8)
	if err := gae.TurnEnds(ends, mask); err != nil {
		t.Fatal(err)
	}
	rewards := tensor.MustNew[float64](1, 8)
	if err := gae.PlaceTurnRewards(rewards, ends, must([]float64{0.5, 1})); err != nil {
		t.Fatal(err)
	}
	kl := must([]float64{0, 10, 0, 0, 0, 0, 0, 0})
	if err := gae.AddKLPenalty(rewards, kl, mask, gae.DefaultKLCoef); err != nil {
		t.Fatal(err)
	}
	// The golden row of docs/spec.md#gae: r = [0, −0.01, 0, 0.5, 0, 0, 0, 1].
	if !slices.Equal(ends.Data, specRow.TurnEnd.Data) {
		t.Errorf("turn ends %v, want %v", ends.Data, specRow.TurnEnd.Data)
	}
	for i, w := range specRow.Rewards.Data {
		if math.Abs(rewards.Data[i]-w) > 1e-15 {
			t.Fatalf("rewards %v, want %v", rewards.Data, specRow.Rewards.Data)
		}
	}
}

func TestHelpersBadInput(t *testing.T) {
	mask := must([]float64{0, 1, 1})
	ends := must([]float64{0, 0, 1})
	three := func() tensor.Batch[float64] { return tensor.MustNew[float64](1, 3) }
	cases := []errCase{
		{"TurnEnds mask entry", func() error { return gae.TurnEnds(three(), must([]float64{0, 0.5, 1})) }, tensor.ErrMask, "mask[0,1]"},
		{"TurnEnds dst shape", func() error { return gae.TurnEnds(tensor.MustNew[float64](1, 2), mask) }, tensor.ErrShape, "dst"},
		{"PlaceTurnRewards rows", func() error { return gae.PlaceTurnRewards(three(), ends, tensor.Batch[float64]{}) }, tensor.ErrShape, "turn_rewards"},
		{"PlaceTurnRewards count", func() error { return gae.PlaceTurnRewards(three(), must([]float64{0, 1, 1}), must([]float64{1})) }, tensor.ErrShape, "turn_rewards[0]"},
		{"PlaceTurnRewards dst overlaps", func() error { e := must([]float64{0, 0, 1}); return gae.PlaceTurnRewards(e, e, must([]float64{1})) }, tensor.ErrOverlap, "dst"},
		{"TurnEnds dst overlaps", func() error { m := must([]float64{0, 1, 1}); return gae.TurnEnds(m, m) }, tensor.ErrOverlap, "dst"},
		{"PlaceTurnRewards NaN", func() error { return gae.PlaceTurnRewards(three(), ends, must([]float64{math.NaN()})) }, tensor.ErrNonFinite, "turn_rewards[0,0]"},
		{"PlaceTurnRewards turn_end entry", func() error { return gae.PlaceTurnRewards(three(), must([]float64{0, 3, 1}), must([]float64{1})) }, tensor.ErrMask, "turn_end[0,1]"},
		{"PlaceTurnRewards dst shape", func() error { return gae.PlaceTurnRewards(tensor.MustNew[float64](3, 1), ends, must([]float64{1})) }, tensor.ErrShape, "dst"},
		{"AddKLPenalty beta", func() error { return gae.AddKLPenalty(three(), three(), mask, -1) }, tensor.ErrRange, "beta"},
		{"AddKLPenalty beta NaN", func() error { return gae.AddKLPenalty(three(), three(), mask, math.NaN()) }, tensor.ErrRange, "beta"},
		{"AddKLPenalty kl NaN", func() error { return gae.AddKLPenalty(three(), must([]float64{0, 0, math.NaN()}), mask, 0.1) }, tensor.ErrNonFinite, "kl[0,2]"},
		{"AddKLPenalty rewards Inf", func() error { return gae.AddKLPenalty(must([]float64{0, math.Inf(1), 0}), three(), mask, 0.1) }, tensor.ErrNonFinite, "rewards[0,1]"},
		{"AddKLPenalty overflow", func() error {
			return gae.AddKLPenalty(must([]float64{0, -1e308, 0}), must([]float64{0, 1e308, 0}), mask, 1)
		}, tensor.ErrRange, "rewards[0,1]"},
		{"AddKLPenalty mask entry", func() error { return gae.AddKLPenalty(three(), three(), must([]float64{0, -1, 1}), 0.1) }, tensor.ErrMask, "mask[0,1]"},
		{"AddKLPenalty kl shape", func() error { return gae.AddKLPenalty(three(), tensor.MustNew[float64](3, 1), mask, 0.1) }, tensor.ErrShape, "kl"},
	}
	checkErrors(t, cases)

	// A failed AddKLPenalty leaves the rewards untouched.
	r := must([]float64{1, 2, 3})
	if err := gae.AddKLPenalty(r, must([]float64{1, 1, math.NaN()}), mask, 0.5); err == nil || !slices.Equal(r.Data, []float64{1, 2, 3}) {
		t.Errorf("after a failed call the rewards are %v (error %v), want them unchanged", r.Data, err)
	}
}
