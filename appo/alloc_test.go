package appo

import (
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

// TestNoAllocationsWhenWarm checks the steady state of a training loop: a
// Weighter that has seen a group of this size allocates nothing, and
// neither do FrameAttention and Scatter.
func TestNoAllocationsWhenWarm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := randomGroup(r, 6, 12, 5, 9)
	g.rewards[0], g.rewards[1] = 1, 0
	in := g.inputs(t)
	cfg := DefaultConfig()
	cfg.K1, cfg.K2, cfg.K3, cfg.Strategy = 3, 2, 4, All
	var w Weighter[float64]
	dst := make([]float64, len(flat(must(reference(g, cfg)))))
	run := func() {
		res, err := w.Weights(dst, in, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Frames) == 0 {
			t.Fatal("no frames selected: the test would not exercise the groups")
		}
	}
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("Weighter.Weights: %v allocations per warm call, want 0", n)
	}

	// A source that fills dst: the Weighter keeps the rows it handed out.
	fill := in
	fill.Dists = newCountingSource(in.Dists.(*Dense[float64]), true)
	in = fill
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("Weighter.Weights with a source that fills dst: %v allocations per warm call, want 0", n)
	}
	layers := rawAttention()
	att := tensor.MustNew[float64](2, 2)
	spans := []Span{{1, 3}, {3, 5}}
	if n := testing.AllocsPerRun(20, func() { _ = FrameAttention(att, layers, 2, spans) }); n != 0 {
		t.Errorf("FrameAttention: %v allocations, want 0", n)
	}

	mask := tensor.Batch[float64]{Shape: tensor.Shape{B: 2, T: 3}, Data: []float64{1, 0, 1, 1, 1, 0}}
	out := tensor.MustNew[float64](2, 3)
	wts, lengths := []float64{1, 2, 3, 4}, []int{2, 2}
	if n := testing.AllocsPerRun(20, func() { _ = Scatter(out, mask, wts, lengths) }); n != 0 {
		t.Errorf("Scatter: %v allocations, want 0", n)
	}
}

func must(w [][]float64, _ []int) [][]float64 { return w }
