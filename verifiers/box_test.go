package verifiers_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIoU(t *testing.T) {
	for _, c := range []struct {
		a, b verifiers.Box
		want float64
	}{
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{0, 0, 10, 10}, 1},
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{5, 0, 15, 10}, 50.0 / 150},
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{0, 0, 10, 5}, 0.5},
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{10, 0, 20, 10}, 0}, // touching
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{20, 20, 30, 30}, 0},
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{10, 10, 0, 0}, 0}, // unordered
		{verifiers.Box{0, 0, 10, 10}, verifiers.Box{0, 0, math.Inf(1), 10}, 0},
		{verifiers.Box{0, 0, 0, 0}, verifiers.Box{0, 0, 0, 0}, 0}, // empty union
		{verifiers.Box{2, 2, 4, 4}, verifiers.Box{0, 0, 10, 10}, 0.04},
	} {
		if got := verifiers.IoU(c.a, c.b); !near(got, c.want) {
			t.Errorf("IoU(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := verifiers.IoU(c.b, c.a); !near(got, c.want) {
			t.Errorf("IoU(%v, %v) = %v, want %v (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

func TestParseBox(t *testing.T) {
	for _, c := range []struct {
		in   string
		want verifiers.Box
		ok   bool
	}{
		{"[10, 20, 30, 40]", verifiers.Box{10, 20, 30, 40}, true},
		{"(1.5,2,3,4e1)", verifiers.Box{1.5, 2, 3, 40}, true},
		{`[{"bbox_2d": [1, 2, 3, 4], "label": "cat"}]`, verifiers.Box{1, 2, 3, 4}, true},
		{"first [1,2,3,4] then [5,6,7,8]", verifiers.Box{5, 6, 7, 8}, true},
		{"[1,2,3]", verifiers.Box{}, false},
		{"[1,2,3,4,5]", verifiers.Box{}, false},
		{"[1,2,3,4)", verifiers.Box{}, false},
		{"[1,2,3,1e999]", verifiers.Box{}, false},
		{"[[[1,2,3,4]]]", verifiers.Box{1, 2, 3, 4}, true},
		{"[-1, -2, +3, 4]", verifiers.Box{-1, -2, 3, 4}, true},
	} {
		got, ok := verifiers.ParseBox(c.in)
		assert.Equal(t, c.want, got, "ParseBox(%q)", c.in)
		assert.Equal(t, c.ok, ok, "ParseBox(%q)", c.in)
	}
}

func TestIoUVerifier(t *testing.T) {
	ref := "[0, 0, 10, 10]"
	for _, c := range []struct {
		pred    string
		p       verifiers.Params
		score   float64
		correct bool
	}{
		{"<answer>[0,0,10,10]</answer>", nil, 1, true},
		{"<answer>[0,0,10,5]</answer>", nil, 0.5, true},                                    // plain IoU, IoU@50 hit
		{"<answer>[5,0,15,10]</answer>", nil, 1.0 / 3, false},                              // plain IoU below 0.5
		{"<answer>[5,0,15,10]</answer>", verifiers.Params{"threshold": 0.5}, 0, false},     // Eq. 3: below ε
		{"<answer>[0,0,10,9]</answer>", verifiers.Params{"threshold": 0.85}, 0.9, true},    // above ε
		{"<answer>[0,0,10,9]</answer>", verifiers.Params{"progress": 0.05}, 0.9, true},     // ε = 0.85
		{"<answer>[0,0,10,9]</answer>", verifiers.Params{"progress": 0.2}, 0, false},       // ε = 0.95
		{"<answer>[0,0,10,9.95]</answer>", verifiers.Params{"progress": 0.9}, 0.995, true}, // ε = 0.99
		{"<answer>[10,10,0,0]</answer>", nil, 0, false},                                    // unordered
		{"<answer>no box</answer>", nil, 0, false},
	} {
		res := verify(t, "iou", c.pred, ref, c.p)
		assert.True(t, near(res.Score, c.score), "iou(%q, %v) = %+v, want score %v correct", c.pred, c.p, res, c.score)
		assert.Equal(t, c.correct, res.Correct, "iou(%q, %v) = %+v, want score %v correct", c.pred, c.p, res, c.score)
	}
	ctx := context.Background()
	for _, c := range []struct {
		ref  string
		p    verifiers.Params
		kind error
	}{
		{"no box", nil, verifiers.ErrSyntax},
		{"[5,5,5,9]", nil, verifiers.ErrSyntax},
		{ref, verifiers.Params{"threshold": 1.5}, verifiers.ErrParam},
		{ref, verifiers.Params{"progress": -0.1}, verifiers.ErrParam},
		{ref, verifiers.Params{"progress": 0.5, "threshold": 0.5}, verifiers.ErrParam},
	} {
		_, err := verifiers.Default.Verify(ctx, "iou", "[0,0,1,1]", c.ref, c.p)
		assert.ErrorIs(t, err, c.kind, "iou(ref %q, %v): err = %v, want %v", c.ref, c.p, err, c.kind)
	}
}

func det(label string, b ...float64) verifiers.Detection {
	return verifiers.Detection{Label: label, Box: verifiers.Box(b)}
}

func TestScoreDetections(t *testing.T) {
	cfg := verifiers.DefaultDetectionConfig()
	optimal := cfg
	optimal.Optimal = true
	// Two ground-truth boxes of one label where greedy, taking gt 0 first,
	// steals the prediction gt 1 needs: IoU(g0,a) = 9/11, IoU(g1,a) = 8/12,
	// IoU(g0,b) = 8/12, IoU(g1,b) = 5/15 < 0.5.
	steal := []verifiers.Detection{det("x", 0, 0, 10, 10), det("x", 3, 0, 13, 10)}
	stealPred := []verifiers.Detection{det("x", 1, 0, 11, 10), det("x", -2, 0, 8, 10)}
	for _, c := range []struct {
		name     string
		gt, pred []verifiers.Detection
		cfg      verifiers.DetectionConfig
		score    float64
		matched  int
	}{
		{"perfect", []verifiers.Detection{det("cat", 0, 0, 10, 10)}, []verifiers.Detection{det("cat", 0, 0, 10, 10)}, cfg, 1, 1},
		{"both empty", nil, nil, cfg, 1, 0},
		// Label-first: a perfect box with the wrong label matches nothing.
		{"wrong label", []verifiers.Detection{det("cat", 0, 0, 10, 10)}, []verifiers.Detection{det("dog", 0, 0, 10, 10)}, cfg, 0, 0},
		{"label case", []verifiers.Detection{det("Cat", 0, 0, 10, 10)}, []verifiers.Detection{det("cat", 0, 0, 10, 10)}, cfg, 1, 1},
		// gt cat↔pred 1 (IoU 0.5), dog↔pred 0 (IoU 1), one false alarm:
		// meanIoU 0.75, completeness 1 − (0 + 1/3)/2 = 5/6, penalty 0.6¹.
		{"mixed", []verifiers.Detection{det("cat", 0, 0, 10, 10), det("dog", 20, 20, 30, 30)},
			[]verifiers.Detection{det("dog", 20, 20, 30, 30), det("cat", 0, 0, 10, 5), det("cat", 50, 50, 60, 60)},
			cfg, (0.75*0.7 + 5.0/6*0.3) * 0.6, 2},
		// Below the threshold: no match, miss 1, false alarm 1.
		{"below threshold", []verifiers.Detection{det("cat", 0, 0, 10, 10)}, []verifiers.Detection{det("cat", 5, 0, 15, 10)}, cfg, 0, 0},
		// Empty prediction: miss 1, false alarm 0 → completeness 0.5,
		// times 0.6² for two missing boxes.
		{"empty pred", []verifiers.Detection{det("a", 0, 0, 1, 1), det("b", 0, 0, 1, 1)}, nil, cfg, 0.3 * 0.5 * 0.36, 0},
		// Duplicates: 3 predictions of one box; one matches, 0.6² penalty.
		{"duplicates", []verifiers.Detection{det("a", 0, 0, 10, 10)},
			[]verifiers.Detection{det("a", 0, 0, 10, 10), det("a", 0, 0, 10, 10), det("a", 0, 0, 10, 10)},
			cfg, (0.7 + 0.3*(1-(2.0/3)/2)) * 0.36, 1},
		{"greedy steals", steal, stealPred, cfg, (9.0/11)*0.7 + 0.5*0.3, 1},
		{"optimal", steal, stealPred, optimal, (8.0/12)*0.7 + 0.3, 2},
	} {
		ds, err := verifiers.ScoreDetections(c.gt, c.pred, c.cfg)
		require.NoError(t, err, "%s", c.name)
		assert.True(t, near(ds.Score, c.score), "%s: %+v, want score %v matched", c.name, ds, c.score)
		assert.Equal(t, c.matched, ds.Matched, "%s: %+v, want score %v matched", c.name, ds, c.score)
	}
	// Greedy takes ground truth in order: the first box gets its best.
	ds, _ := verifiers.ScoreDetections(steal, stealPred, cfg)
	assert.Equal(t, 0, ds.Match[0], "greedy Match = %v, want [0 -1]", ds.Match)
	assert.Equal(t, -1, ds.Match[1], "greedy Match = %v, want [0 -1]", ds.Match)
	ds, _ = verifiers.ScoreDetections(steal, stealPred, optimal)
	assert.Equal(t, 1, ds.Match[0], "optimal Match = %v, want [1 0]", ds.Match)
	assert.Equal(t, 0, ds.Match[1], "optimal Match = %v, want [1 0]", ds.Match)
	bad := cfg
	bad.Threshold = 0
	_, err := verifiers.ScoreDetections(steal, stealPred, bad)
	assert.Error(t, err, "threshold 0 accepted")
	_, err = verifiers.ScoreDetections([]verifiers.Detection{det("a", 1, 1, 0, 0)}, nil, cfg)
	assert.Error(t, err, "unordered ground-truth box accepted")
}

// TestPenaltyIsPerCountDifference checks the factor 0.6^|#pred − #gt| on
// otherwise perfect answers.
func TestPenaltyIsPerCountDifference(t *testing.T) {
	gt := []verifiers.Detection{det("a", 0, 0, 10, 10)}
	for extra := range 5 {
		pred := []verifiers.Detection{det("a", 0, 0, 10, 10)}
		for range extra {
			pred = append(pred, det("b", 50, 50, 60, 60))
		}
		ds, err := verifiers.ScoreDetections(gt, pred, verifiers.DefaultDetectionConfig())
		require.NoError(t, err)
		fa := float64(extra) / float64(extra+1)
		want := (0.7 + 0.3*(1-fa/2)) * math.Pow(0.6, float64(extra))
		assert.True(t, near(ds.Score, want), "%d extra boxes: %+v, want score %v", extra, ds, want)
		assert.True(t, near(ds.Penalty, math.Pow(0.6, float64(extra))), "%d extra boxes: %+v, want score %v", extra, ds, want)
	}
}

func TestDetectionVerifier(t *testing.T) {
	ref := `[{"label": "cat", "bbox": [0, 0, 10, 10]}, {"label": "dog", "bbox": [20, 20, 30, 30]}]`
	for _, c := range []struct {
		pred    string
		p       verifiers.Params
		score   float64
		correct bool
	}{
		{"<think>two animals</think><answer>```json\n[{\"bbox_2d\": [0,0,10,10], \"label\": \"cat\"}, {\"bbox_2d\": [20,20,30,30], \"label\": \"dog\"}]\n```</answer>", nil, 1, true},
		{`<answer>[{"label": "dog", "bbox": [20,20,30,30]}, {"label": "cat", "bbox": [0,0,10,10]}]</answer>`, nil, 1, true},
		{`<answer>{"label": "cat", "bbox": [0,0,10,10]}</answer>`, nil, (0.7 + 0.3*0.75) * 0.6, false},                                                                // dog missed
		{`<answer>[{"label": "cat", "bbox": [0,0,10,9]}, {"label": "dog", "bbox": [20,20,30,30]}]</answer>`, verifiers.Params{"progress": 0.5}, 0.7 + 0.3*0.5, false}, // cat IoU 0.9 < 0.99: dog alone
		{`<answer>[]</answer>`, nil, 0.3 * 0.5 * 0.36, false},
		{`<answer>cat at 0,0</answer>`, nil, 0, false},
		{`<answer>[{"label": "cat", "bbox": [0,0,10]}]</answer>`, nil, 0, false},
		{`<answer>[{"label": 7, "bbox": [0,0,10,10]}]</answer>`, nil, 0, false},
	} {
		res := verify(t, "detection", c.pred, ref, c.p)
		assert.True(t, near(res.Score, c.score), "detection(%q, %v) = %+v, want %v", c.pred, c.p, res, c.score)
		assert.Equal(t, c.correct, res.Correct, "detection(%q, %v) = %+v, want %v", c.pred, c.p, res, c.score)
	}
	ctx := context.Background()
	for _, c := range []struct {
		ref string
		p   verifiers.Params
	}{
		{"no json", nil},
		{`[{"label": "a", "bbox": [5,5,1,1]}]`, nil},
		{`[{"bbox": [0,0,1,1]}]`, nil},
		{ref, verifiers.Params{"matching": "best"}},
		{ref, verifiers.Params{"threshold": 0}},
		{ref, verifiers.Params{"completeness": 2}},
		{ref, verifiers.Params{"count_penalty": 0}},
	} {
		_, err := verifiers.Default.Verify(ctx, "detection", "[]", c.ref, c.p)
		assert.Error(t, err, "detection(ref %q, %v) accepted", c.ref, c.p)
	}
}

func TestAssignMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 600 {
		rows, cols := rng.IntN(7), rng.IntN(7)
		cost := make([][]float64, rows)
		for i := range cost {
			cost[i] = make([]float64, cols)
			for j := range cost[i] {
				if trial%3 == 0 {
					cost[i][j] = float64(rng.IntN(4)) // many ties
				} else {
					cost[i][j] = rng.NormFloat64() * 10
				}
			}
		}
		dst := make([]int, rows)
		got, err := verifiers.Assign(dst, cost)
		require.NoError(t, err)
		want := bruteAssign(cost, cols)
		if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Fatalf("trial %d %d×%d: Assign = %v, brute force %v\n%v", trial, rows, cols, got, want, cost)
		}
		// dst is a valid assignment of min(rows, cols) pairs whose cost is the total.
		seen := map[int]bool{}
		var sum float64
		n := 0
		for i, j := range dst {
			if j < 0 {
				continue
			}
			if j >= cols || seen[j] {
				t.Fatalf("trial %d: dst = %v is not an assignment", trial, dst)
			}
			seen[j] = true
			sum += cost[i][j]
			n++
		}
		if n != min(rows, cols) || math.Abs(sum-got) > 1e-9*max(1, math.Abs(got)) {
			t.Fatalf("trial %d: dst %v has %d pairs costing %v, total %v", trial, dst, n, sum, got)
		}
	}
}

// bruteAssign tries every injection of the smaller side into the larger.
func bruteAssign(cost [][]float64, cols int) float64 {
	rows := len(cost)
	if rows == 0 || cols == 0 {
		return 0
	}
	at := func(i, j int) float64 { return cost[i][j] }
	n, m := rows, cols
	if rows > cols {
		n, m = cols, rows
		at = func(i, j int) float64 { return cost[j][i] }
	}
	best := math.Inf(1)
	used := make([]bool, m)
	var rec func(i int, sum float64)
	rec = func(i int, sum float64) {
		if i == n {
			best = min(best, sum)
			return
		}
		for j := range m {
			if !used[j] {
				used[j] = true
				rec(i+1, sum+at(i, j))
				used[j] = false
			}
		}
	}
	rec(0, 0)
	return best
}

func TestAssignErrors(t *testing.T) {
	for name, c := range map[string]struct {
		dst  []int
		cost [][]float64
	}{
		"dst length": {make([]int, 1), [][]float64{{1}, {2}}},
		"ragged":     {make([]int, 2), [][]float64{{1, 2}, {3}}},
		"NaN":        {make([]int, 1), [][]float64{{math.NaN()}}},
		"Inf":        {make([]int, 1), [][]float64{{math.Inf(-1)}}},
		"huge":       {make([]int, 1), [][]float64{{1e200}}},
	} {
		_, err := verifiers.Assign(c.dst, c.cost)
		assert.Error(t, err, "%s: accepted", name)
	}
}

func TestDynamicIoU(t *testing.T) {
	for _, c := range []struct{ p, want float64 }{
		{0, 0.85}, {0.05, 0.85}, {0.10, 0.85}, {0.1000001, 0.95}, {0.25, 0.95}, {0.26, 0.99}, {1, 0.99},
	} {
		got, err := verifiers.DynamicIoU(c.p)
		require.NoError(t, err, "DynamicIoU(%v)", c.p)
		assert.Equal(t, c.want, got, "DynamicIoU(%v)", c.p)
	}
	for _, p := range []float64{-0.01, 1.01, math.NaN()} {
		_, err := verifiers.DynamicIoU(p)
		assert.Error(t, err, "DynamicIoU(%v) accepted", p)
	}
	if got, _ := verifiers.LooseIoUSchedule().At(0.5); got != 0.85 {
		t.Errorf("loose schedule at 0.5 = %v", got)
	}
	if got, _ := verifiers.StrictIoUSchedule().At(0); got != 0.9 {
		t.Errorf("strict schedule at 0 = %v", got)
	}
	assert.Error(t, (verifiers.IoUSchedule{Until: []float64{0.5, 0.4}, Thresholds: []float64{1, 1, 1}}).Validate(), "decreasing boundaries accepted")
}

func TestAdaptiveIoU(t *testing.T) {
	a, err := verifiers.NewAdaptiveIoU(0.5)
	require.NoError(t, err)
	require.Equal(t, 0.5, a.Threshold(), "starts at")
	steps := []struct{ bsr, want float64 }{
		{0.4, 0.5},  // below τ at the bottom: stays
		{0.5, 0.5},  // equal: stays
		{0.9, 0.55}, // above: up
		{0.9, 0.6},
		{0.1, 0.55}, // below: down
	}
	for _, s := range steps {
		got, err := a.Step(s.bsr)
		require.NoError(t, err, "Step(%v)", s.bsr)
		assert.Equal(t, s.want, got, "Step(%v)", s.bsr)
	}
	for range 20 {
		_, _ = a.Step(1)
	}
	assert.Equal(t, 0.99, a.Threshold(), "top level, want 0.99")
	// At 0.99: two of four boxes exceed it → 0.5 = τ, stays.
	if got, _ := a.Observe([]float64{1, 0.995, 0.99, 0.3}); got != 0.99 {
		t.Errorf("Observe = %v, want 0.99", got)
	}
	if got, _ := a.Observe([]float64{0.3}); got != 0.95 {
		t.Errorf("Observe(miss) = %v, want 0.95", got)
	}
	_, err = a.Observe(nil)
	assert.Error(t, err, "Observe(nil) accepted")
	_, err = a.Observe([]float64{1.5})
	assert.Error(t, err, "Observe(1.5) accepted")
	_, err = a.Step(math.NaN())
	assert.Error(t, err, "Step(NaN) accepted")
	_, err = verifiers.NewAdaptiveIoU(2)
	assert.Error(t, err, "τ = 2 accepted")
}
