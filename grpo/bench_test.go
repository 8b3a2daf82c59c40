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
