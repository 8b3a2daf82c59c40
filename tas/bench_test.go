package tas_test

import (
	"testing"

	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// BenchmarkWeights measures `rlpost bench -op tas_weights`: λ = 0.3
// parabolic weights for the seeded 64×4096 batch's mask.
func BenchmarkWeights(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	w := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	cfg := tas.DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		if err := tas.Weights(w, d.Mask, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.Shape.Size()), "ns/token")
}
