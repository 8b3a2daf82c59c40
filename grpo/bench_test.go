package grpo_test

import (
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
)

// BenchmarkGroupAdvantages is the `rlpost bench -op group_advantages` work:
// GRPO advantages of 64·4096 rewards in contiguous groups of 16.
func BenchmarkGroupAdvantages(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	r := d.Rewards.Data
	adv := make([]float32, len(r))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := grpo.Advantages(adv, r, grpo.Contiguous(16), grpo.DefaultConfig()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(r)), "ns/reward")
}

// BenchmarkDecoupledAdvantages is GDPO on three reward functions of the
// same 64·4096 completions (the bench rewards, and two derived ones), in
// groups of 16, beside BenchmarkGroupAdvantages' one.
func BenchmarkDecoupledAdvantages(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	r := d.Rewards.Data
	r2, r3 := make([]float32, len(r)), make([]float32, len(r))
	for i, v := range r {
		r2[i], r3[i] = 100*v*v, float32(i%5)
	}
	adv := make([]float32, len(r))
	cols := [][]float32{r, r2, r3}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := grpo.DecoupledAdvantages(adv, cols, []float64{1, 0.5, 0.2}, grpo.Contiguous(16), grpo.TRLDefaults()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(r)), "ns/reward")
}
