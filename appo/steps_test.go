package appo

import (
	"math"
	"slices"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

func TestTopK(t *testing.T) {
	for _, c := range []struct {
		name string
		vals []float64
		k    int
		want []int
	}{
		{"ties go to the lower index", []float64{3, 1, 3, 2}, 2, []int{0, 2}},
		{"rank order", []float64{3, 1, 3, 2}, 3, []int{0, 2, 3}},
		{"k beyond n takes all", []float64{3, 1, 3, 2}, 10, []int{0, 2, 3, 1}},
		{"k = 0", []float64{3, 1}, 0, []int{}},
		{"all equal", []float64{5, 5, 5}, 2, []int{0, 1}},
		{"ascending input shifts every time", []float64{1, 2, 3, 4}, 2, []int{3, 2}},
		{"late tie does not displace", []float64{2, 1, 2}, 1, []int{0}},
		{"empty", nil, 3, []int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := topK(make([]int, 0, len(c.vals)), c.vals, 0, 1, len(c.vals), c.k)
			if !slices.Equal(got, c.want) {
				t.Errorf("topK(%v, %d) = %v, want %v", c.vals, c.k, got, c.want)
			}
		})
	}
	// A strided column: column 1 of a [3, 2] matrix is (0.2, 0.7, 0.2).
	m := []float32{9, 0.2, 9, 0.7, 9, 0.2}
	if got := topK(nil, m, 1, 2, 3, 2); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("strided topK = %v, want [1 0]", got)
	}
}

func TestFocus(t *testing.T) {
	// Columns: frame 0 = (0.2, 0.6, 0.4), frame 1 = (0.5, 0.1, 0.5).
	a := tensor.Batch[float64]{Shape: tensor.Shape{B: 3, T: 2}, Data: []float64{
		0.2, 0.5,
		0.6, 0.1,
		0.4, 0.5,
	}}
	for _, c := range []struct {
		k1   int
		want []float64
	}{
		{1, []float64{0.6, 0.5}},
		{2, []float64{(0.6 + 0.4) / 2, (0.5 + 0.5) / 2}},
		// K1 beyond the response length averages all its tokens.
		{5, []float64{1.2 / 3, 1.1 / 3}},
	} {
		got := make([]float64, 2)
		focus(got, make([]int, 0, 3), a, c.k1)
		for f := range got {
			if math.Abs(got[f]-c.want[f]) > 1e-15 {
				t.Errorf("K1 = %d: focus[%d] = %v, want %v", c.k1, f, got[f], c.want[f])
			}
		}
	}
}

// selectionGroup has one-token responses, so each focus is the attention
// row itself: response 0 (r = 1) looks at frames 0 then 1; response 1
// (r = 0.5, exactly τ, so in S1) at 1 and 2 equally; response 2 (r = 0.2)
// at 2 then 3; response 3 (r = 0) at 0 and 3 equally; response 4 (r = 1)
// has no tokens and takes part in nothing.
func selectionGroup() group {
	one := func(row ...float64) [][]float64 { return [][]float64{row} }
	p := [][]float64{{1}}
	return group{
		rewards: []float64{1, 0.5, 0.2, 0, 1},
		attn: [][][]float64{
			one(0.9, 0.1, 0, 0),
			one(0, 0.3, 0.3, 0.1),
			one(0, 0, 0.8, 0.7),
			one(0.4, 0, 0, 0.4),
			{},
		},
		dists: [][][]float64{p, p, p, p, {}},
	}
}

func TestFrameSelection(t *testing.T) {
	for _, c := range []struct {
		name            string
		k2              int
		strategy        Strategy
		high, low, want []int
	}{
		// K2 = 2: ψS1 = {0,1} ∪ {1,2}, ψS2 = {2,3} ∪ {0,3}.
		{"K2=2 soft", 2, Soft, []int{0, 1, 2}, []int{0, 2, 3}, []int{0, 1, 2}},
		{"K2=2 hard", 2, Hard, []int{0, 1, 2}, []int{0, 2, 3}, []int{1}},
		{"K2=2 all", 2, All, []int{0, 1, 2}, []int{0, 2, 3}, []int{0, 1, 2, 3}},
		// K2 = 1: the ties of responses 1 and 3 go to the lower frame.
		{"K2=1 soft", 1, Soft, []int{0, 1}, []int{0, 2}, []int{0, 1}},
		{"K2=1 hard", 1, Hard, []int{0, 1}, []int{0, 2}, []int{1}},
		{"K2=1 all", 1, All, []int{0, 1}, []int{0, 2}, []int{0, 1, 2}},
		// K2 beyond the frame count takes every frame.
		{"K2=9 hard", 9, Hard, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, []int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.K1, cfg.K2, cfg.Strategy = 1, c.k2, c.strategy
			var w Weighter[float64]
			res, err := w.Weights(make([]float64, 4), selectionGroup().inputs(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.HighFrames, c.high) || !slices.Equal(res.LowFrames, c.low) || !slices.Equal(res.Frames, c.want) {
				t.Errorf("ψS1 %v, ψS2 %v, ψ′ %v; want %v, %v, %v", res.HighFrames, res.LowFrames, res.Frames, c.high, c.low, c.want)
			}
			if res.High != 2 || res.Low != 2 {
				t.Errorf("|S1| = %d, |S2| = %d, want 2, 2 (the empty response is in neither)", res.High, res.Low)
			}
		})
	}
}

func TestGroupsTieBreakAndSlots(t *testing.T) {
	// One frame. Response 0's attention (0.5, 0.9, 0.5, 0.5): with K3 = 3
	// its ranks are tokens 1, 0, 2 (the ties in index order). Response 1
	// has two tokens, fewer than K3: both, ranked (0.7 before 0.2).
	p := []float64{1}
	g := group{
		rewards: []float64{1, 0},
		attn:    [][][]float64{{{0.5}, {0.9}, {0.5}, {0.5}}, {{0.2}, {0.7}}},
		dists:   [][][]float64{{p, p, p, p}, {p, p}},
	}
	cfg := DefaultConfig()
	cfg.K3 = 3
	var w Weighter[float64]
	res, err := w.Weights(make([]float64, 6), g.inputs(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Flat token ids: response 0 is 0..3, response 1 is 4..5.
	if want := []int{1, 0, 2, 5, 4}; !slices.Equal(w.toks, want) {
		t.Errorf("group members %v, want %v", w.toks, want)
	}
	if res.GroupSize != 5 || res.Weighted != 5 {
		t.Errorf("GroupSize %d, Weighted %d, want 5, 5", res.GroupSize, res.Weighted)
	}
	if want := []int{0, 3, 5}; !slices.Equal(w.slot, want) {
		t.Errorf("slot offsets %v, want %v", w.slot, want)
	}
}

// KL values of the two-point distributions the hand tests use: with
// p = (1, 0) and q = (½, ½), p̄ = (¾, ¼) and KL(p‖p̄) = log 4/3 while
// KL(q‖p̄) = ½·log 4/3, exactly half. With p and (0, 1) the mean is
// (½, ½) and both KLs are log 2, exactly equal.
var (
	sure  = []float64{1, 0}
	other = []float64{0, 1}
	half  = []float64{0.5, 0.5}
)

func TestWeightsByHand(t *testing.T) {
	for _, c := range []struct {
		name string
		g    group
		cfg  func(*Config)
		want [][]float64
	}{{
		// Frames 0 and 1 are response 0's top two (K1 = 1: column
		// maxima 0.9, 0.8, 0.2). Token (0,0) leads both groups. Group of
		// frame 0: (0,0) = sure against (1,0) = half: normalised 1 and
		// 0. Group of frame 1: (0,0) = sure against (1,1) = other: equal
		// KLs, all 0. So (0,0) gets 1 + α·(1 + 0)/2 and everyone else 1.
		name: "a token in two groups, one of them all equal",
		g: group{
			rewards: []float64{1, 0},
			attn: [][][]float64{
				{{0.9, 0.8, 0}, {0.1, 0.1, 0.2}},
				{{0.3, 0, 0.5}, {0.1, 0.4, 0}},
			},
			dists: [][][]float64{{sure, half}, {half, other}},
		},
		cfg:  func(c *Config) { c.K1, c.K2, c.K3, c.Alpha = 1, 2, 1, 1 },
		want: [][]float64{{1.5, 1}, {1, 1}},
	}, {
		// One frame, K3 = 64 beyond both lengths: every token is in the
		// group. Slot 0: (0,0) = sure vs (1,0) = half → KL log 4/3 and
		// ½ log 4/3. Slot 1: sure vs sure → 0, 0. Slot 2: response 1
		// alone → 0. Min-max over the group: 1, ½, 0, 0, 0.
		name: "K3 beyond the response lengths",
		g: group{
			rewards: []float64{1, 1},
			attn:    [][][]float64{{{0.9}, {0.5}}, {{0.8}, {0.4}, {0.1}}},
			dists:   [][][]float64{{sure, sure}, {half, sure, half}},
		},
		want: [][]float64{{2.7, 1}, {1.85, 1, 1}},
	}, {
		// Three responses with the same distribution at each slot: the
		// KLs are 0 up to rounding (p̄ = (p+p+p)/3 need not be p: slot 0
		// gives −1.1e-16, slot 1 exactly 0), and the group counts as all
		// equal instead of spreading that noise over [1, 1 + α].
		name: "all equal up to rounding",
		g: group{
			rewards: []float64{1, 1, 1},
			attn:    [][][]float64{{{0.9}, {0.1}}, {{0.5}, {0.2}}, {{0.3}, {0.1}}},
			dists: [][][]float64{
				{{0.01, 0.02, 0.97}, {0.1, 0.2, 0.7}},
				{{0.01, 0.02, 0.97}, {0.1, 0.2, 0.7}},
				{{0.01, 0.02, 0.97}, {0.1, 0.2, 0.7}},
			},
		},
		want: [][]float64{{1, 1}, {1, 1}, {1, 1}},
	}, {
		// All responses below τ: Soft selects nothing.
		name: "no high-reward response",
		g: group{
			rewards: []float64{0, 0.4},
			attn:    [][][]float64{{{0.9}}, {{0.5}}},
			dists:   [][][]float64{{sure}, {half}},
		},
		want: [][]float64{{1}, {1}},
	}, {
		// The same group under All: frame 0 is selected, sure vs half.
		name: "no high-reward response, strategy all",
		g: group{
			rewards: []float64{0, 0.4},
			attn:    [][][]float64{{{0.9}}, {{0.5}}},
			dists:   [][][]float64{{sure}, {half}},
		},
		cfg:  func(c *Config) { c.Strategy = All },
		want: [][]float64{{2.7}, {1}},
	}, {
		// Responses without tokens take part in no step.
		name: "empty responses",
		g: group{
			rewards: []float64{1, 1, 0},
			attn:    [][][]float64{{}, {{0.3, 0.2}}, {}},
			dists:   [][][]float64{{}, {half}, {}},
		},
		want: [][]float64{{}, {1}, {}},
	}, {
		name: "every response empty",
		g: group{
			rewards: []float64{1, 0},
			attn:    [][][]float64{{}, {}},
			dists:   [][][]float64{{}, {}},
		},
		want: [][]float64{{}, {}},
	}, {
		// A video without frames: nothing to select.
		name: "no frames",
		g: group{
			rewards: []float64{1},
			attn:    [][][]float64{{{}, {}}},
			dists:   [][][]float64{{sure, half}},
		},
		want: [][]float64{{1, 1}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			want := flat(c.want)
			dst := make([]float64, len(want))
			if _, err := Weights(dst, c.g.inputs(t), cfg); err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if math.Abs(dst[k]-want[k]) > 1e-12 {
					t.Errorf("weights %v, want %v", dst, want)
					break
				}
			}
			ref, _ := reference(c.g, cfg)
			for k, x := range flat(ref) {
				if math.Abs(x-want[k]) > 1e-12 {
					t.Errorf("the reference gives %v: the hand computation is wrong", flat(ref))
					break
				}
			}
		})
	}
}
