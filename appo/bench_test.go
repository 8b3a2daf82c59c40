package appo_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/tensor"
)

// benchGroup is the size the paper trains with: G = 8 rollouts of up to 512
// tokens over 30 frames (the 3B model's maximum), with a vocabulary of v
// words. Attention is uniform noise, so each high-reward response picks 5
// frames at random and ψ′ has about 15; the distributions are random rows
// held densely (8·512·v float32: 524 MB at v = 32 000, 2.5 GB at Qwen's
// 152 064).
func benchGroup(b *testing.B, v int) (appo.Inputs[float32], int) {
	const g, l, nf = 8, 512, 30
	r := rand.New(rand.NewPCG(7, 11))
	in := appo.Inputs[float32]{Rewards: []float32{1, 0, 1, 0, 1, 1, 0, 0}, Attention: make([]tensor.Batch[float32], g)}
	lengths := make([]int, g)
	for i := range in.Attention {
		a := tensor.MustNew[float32](l, nf)
		for e := range a.Data {
			a.Data[e] = r.Float32() / 1000
		}
		in.Attention[i], lengths[i] = a, l
	}
	probs := tensor.MustNew[float32](g*l, v)
	for t := range probs.B {
		row := probs.Row(t)
		s := 0.0
		for k := range row {
			row[k] = r.Float32() + 1e-6
			s += float64(row[k])
		}
		for k := range row {
			row[k] = float32(float64(row[k]) / s)
		}
	}
	d, err := appo.NewDense(probs, lengths)
	if err != nil {
		b.Fatal(err)
	}
	in.Dists = d
	return in, g * l
}

// BenchmarkWeights measures one group with the paper's defaults (τ 0.5,
// K1 15, K2 5, K3 64, α 1.7, Soft) through a warm Weighter: "dense"
// computes every grouped token's entropy, "entropies" takes them from the
// source (appo.Entropies), as a trainer that logs entropies can. Besides
// wall time it reports the CPU time of all cores per call (cpu-ns/op),
// which a shared machine disturbs much less.
func BenchmarkWeights(b *testing.B) { benchVocab(b, 32000) }

// BenchmarkWeightsQwen is BenchmarkWeights at the 152 064-word vocabulary
// of Qwen2.5-VL, the paper's policy.
func BenchmarkWeightsQwen(b *testing.B) { benchVocab(b, 152064) }

func benchVocab(b *testing.B, v int) {
	in, tokens := benchGroup(b, v)
	b.Run("dense", func(b *testing.B) { benchWeights(b, in, tokens) })
	d := in.Dists.(*appo.Dense[float32])
	src := &entropySource{Dense: d, h: make([][]float64, len(in.Attention))}
	for i := range src.h {
		src.h[i] = make([]float64, d.Len(i))
		for j := range src.h[i] {
			p, _ := d.Dist(nil, i, j)
			for _, x := range p {
				if x > 0 {
					src.h[i][j] -= float64(x) * math.Log(float64(x))
				}
			}
		}
	}
	in.Dists = src
	b.Run("entropies", func(b *testing.B) { benchWeights(b, in, tokens) })
}

// entropySource adds precomputed entropies to a Dense source.
type entropySource struct {
	*appo.Dense[float32]
	h [][]float64
}

func (s *entropySource) Entropy(i, j int) (float64, error) { return s.h[i][j], nil }

func benchWeights(b *testing.B, in appo.Inputs[float32], tokens int) {
	cfg := appo.DefaultConfig()
	var w appo.Weighter[float32]
	dst := make([]float32, tokens)
	res, err := w.Weights(dst, in, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0, cpuOK := cpuTime()
	for b.Loop() {
		if res, err = w.Weights(dst, in, cfg); err != nil {
			b.Fatal(err)
		}
	}
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tokens), "ns/token")
	b.ReportMetric(float64(len(res.Frames)), "frames")
	b.ReportMetric(float64(res.Weighted), "weighted")
}
