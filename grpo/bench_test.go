package grpo_test

import (
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/benchdata"
	"testing"
)

func BenchmarkGroupAdvantages(b *testing.B) {
	d, _ := benchdata.New(64, 4096)
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
