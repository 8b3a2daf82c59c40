package ppo_test

import (
	"testing"

	"github.com/rlpost/rlpost/internal/benchdata"
	"github.com/rlpost/rlpost/ppo"
)

// BenchmarkPolicyLoss measures the `rlpost bench -op policy_loss` work:
// token-mean, clip 0.2/0.28, dual clip 3, k3 KL with β = 0.001.
func BenchmarkPolicyLoss(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	cfg := ppo.DefaultConfig()
	cfg.ClipHigh, cfg.DualClip, cfg.KLCoef = 0.28, 3, 0.001
	in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp}
	grad := make([]float32, d.Shape.Size())
	b.ReportAllocs()
	b.SetBytes(int64(d.Shape.Size()) * 4 * 6)
	for b.Loop() {
		if _, err := ppo.PolicyLoss(grad, in, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.Shape.Size()), "ns/token")
}
