package grpo_test

import (
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
)

// BenchmarkEstimators is the `rlpost bench -op group_advantages_<estimator>`
// work: 64·4096 rewards in contiguous groups of 16, all marked scored.
func BenchmarkEstimators(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	r := d.Rewards.Data
	adv := make([]float32, len(r))
	scored := make([]bool, len(r))
	for i := range scored {
		scored[i] = true
	}
	for _, e := range []struct {
		name string
		est  grpo.Estimator
	}{{"reinforce_plus_plus_baseline", grpo.ReinforcePlusPlusBaseline}, {"grpo_passk", grpo.PassK}, {"gpg", grpo.GPG}} {
		b.Run(e.name, func(b *testing.B) {
			b.ReportAllocs()
			in := grpo.Inputs[float32]{Scored: scored}
			for b.Loop() {
				if _, err := grpo.AdvantagesWith(adv, r, grpo.Contiguous(16), grpo.Config{Estimator: e.est, Eps: 1e-6}, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(r)), "ns/reward")
		})
	}
}
