package gae_test

import (
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/internal/tool/bench"
	"github.com/rlpost/rlpost/tensor"
)

// BenchmarkAdvantages measures the `rlpost bench -op gae` work: γ = 1,
// λ = 0.95, no whitening, on the seeded 64×4096 batch.
func BenchmarkAdvantages(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	cfg := bench.GAEConfig()
	adv, ret := tensor.MustNew[float32](d.Shape.B, d.Shape.T), tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	b.ReportAllocs()
	for b.Loop() {
		if err := gae.Advantages(adv, ret, d.Rewards, d.Values, d.Mask, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.Shape.Size()), "ns/token")
}

// BenchmarkBiLevel measures `rlpost bench -op bilevel_gae`: as
// BenchmarkAdvantages with a turn end every 64 valid tokens of a row.
func BenchmarkBiLevel(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	ends, err := bench.TurnEnds(d, bench.TurnLength)
	if err != nil {
		b.Fatal(err)
	}
	cfg := bench.BiLevelConfig()
	adv, ret := tensor.MustNew[float32](d.Shape.B, d.Shape.T), tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	b.ReportAllocs()
	for b.Loop() {
		if err := gae.BiLevel(adv, ret, d.Rewards, d.Values, d.Mask, ends, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.Shape.Size()), "ns/token")
}
