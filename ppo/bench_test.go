package ppo_test

import (
	"testing"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/internal/tool/bench"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// benchLoss times fn over the `rlpost bench` batch of shape [b, t] and
// reports ns per position.
func benchLoss(bm *testing.B, b, t int, fn func(d *benchdata.Batch, grad tensor.Batch[float32]) error) {
	d, err := benchdata.New(b, t)
	if err != nil {
		bm.Fatal(err)
	}
	grad := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	bm.ReportAllocs()
	for bm.Loop() {
		if err := fn(d, grad); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(float64(bm.Elapsed().Nanoseconds())/float64(bm.N)/float64(d.Shape.Size()), "ns/token")
}

// BenchmarkPolicyLoss is the `rlpost bench -op policy_loss` work: token-mean,
// clip 0.2/0.28, dual clip 3, k3 KL with β = 0.001, 64 × 4096 tokens.
func BenchmarkPolicyLoss(b *testing.B) {
	cfg := bench.PolicyLossConfig()
	benchLoss(b, 64, 4096, func(d *benchdata.Batch, grad tensor.Batch[float32]) error {
		in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp}
		_, err := ppo.PolicyLoss(grad, in, cfg)
		return err
	})
}

// BenchmarkPolicyLossGo is the same work through the portable Go loop.
func BenchmarkPolicyLossGo(b *testing.B) {
	defer ppo.SetKernelLanes(ppo.SetKernelLanes(0))
	BenchmarkPolicyLoss(b)
}

// BenchmarkPolicyLossAVX2 is the same work through the eight-lane kernel,
// where BenchmarkPolicyLoss takes the widest the processor has.
func BenchmarkPolicyLossAVX2(b *testing.B) {
	if !kernel.HasAVX2 {
		b.Skip("no AVX2 kernel on this processor or build")
	}
	defer ppo.SetKernelLanes(ppo.SetKernelLanes(8))
	BenchmarkPolicyLoss(b)
}

// BenchmarkPolicyLossGSPO is the sequence-level ratio on the same batch.
func BenchmarkPolicyLossGSPO(b *testing.B) {
	cfg := bench.PolicyLossConfig()
	cfg.RatioLevel = ppo.SequenceRatio
	benchLoss(b, 64, 4096, func(d *benchdata.Batch, grad tensor.Batch[float32]) error {
		in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp}
		_, err := ppo.PolicyLoss(grad, in, cfg)
		return err
	})
}

// BenchmarkValueLoss is the clipped critic loss on the same batch.
func BenchmarkValueLoss(b *testing.B) {
	cfg := ppo.DefaultValueConfig()
	benchLoss(b, 64, 4096, func(d *benchdata.Batch, grad tensor.Batch[float32]) error {
		in := ppo.ValueInputs[float32]{Values: d.Values, OldValues: d.Rewards, Returns: d.Logp, Mask: d.Mask}
		_, err := ppo.ValueLoss(grad, in, cfg)
		return err
	})
}

// BenchmarkPolicyLossPacked is BenchmarkPolicyLoss's batch packed
// (tensor.Packed): each row cut after its last valid token, no padding. It
// reports ns per packed position and per valid token (ns/valid); compare
// its ns/op with BenchmarkPolicyLoss's, the same valid tokens padded.
func BenchmarkPolicyLossPacked(b *testing.B) {
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	off := []int{0}
	for r := range d.Shape.B {
		n := 0
		for t, m := range d.Mask.Row(r) {
			if m != 0 {
				n = t + 1
			}
		}
		off = append(off, off[r]+n)
	}
	pack := func(x tensor.Batch[float32]) tensor.Batch[float32] {
		flat := make([]float32, 0, off[len(off)-1])
		for r := range x.B {
			flat = append(flat, x.Row(r)[:off[r+1]-off[r]]...)
		}
		p, err := tensor.Packed(flat, off)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	in := ppo.Inputs[float32]{Logp: pack(d.Logp), OldLogp: pack(d.OldLogp), Advantages: pack(d.Advantages), Mask: pack(d.Mask), RefLogp: pack(d.RefLogp)}
	grad := pack(d.Logp)
	grad.Data = make([]float32, len(grad.Data))
	cfg := bench.PolicyLossConfig()
	var res ppo.Result
	b.ReportAllocs()
	for b.Loop() {
		if res, err = ppo.PolicyLoss(grad, in, cfg); err != nil {
			b.Fatal(err)
		}
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns/float64(grad.Len()), "ns/token")
	b.ReportMetric(ns/float64(res.Tokens), "ns/valid")
}
