// Package benchdata builds the seeded random token batches that `rlpost
// bench` and the packages' Go benchmarks measure on, so both report the same
// work (docs/conformance.md, "rlpost bench").
package benchdata

import (
	"math/rand/v2"

	"github.com/rlpost/rlpost/tensor"
)

// Seed is the seed every benchmark batch is drawn with.
const Seed = 1

// Batch holds the arrays of a benchmark batch of shape [B, T].
type Batch struct {
	Shape tensor.Shape
	// Lengths of the prefix mask, uniform in [T/2, T].
	Lengths []int
	Mask    tensor.Batch[float32]
	// Logp, OldLogp, RefLogp: log-probabilities around −1 whose pairwise
	// differences have a spread of about 0.1, as between consecutive
	// policies of a PPO run.
	Logp, OldLogp, RefLogp tensor.Batch[float32]
	// Advantages: one standard-normal advantage per sequence, broadcast.
	Advantages tensor.Batch[float32]
	// Rewards and Values: standard normal per token.
	Rewards, Values tensor.Batch[float32]
	// Valid is the number of mask-1 tokens.
	Valid int
}

// New draws a batch of shape [b, t] from the fixed seed.
func New(b, t int) (*Batch, error) {
	rng := rand.New(rand.NewPCG(Seed, uint64(b)<<32|uint64(t)))
	d := &Batch{Shape: tensor.Shape{B: b, T: t}, Lengths: make([]int, b)}
	var err error
	alloc := func() tensor.Batch[float32] {
		x, e := tensor.New[float32](b, t)
		if err == nil {
			err = e
		}
		return x
	}
	d.Mask, d.Logp, d.OldLogp, d.RefLogp = alloc(), alloc(), alloc(), alloc()
	d.Advantages, d.Rewards, d.Values = alloc(), alloc(), alloc()
	if err != nil {
		return nil, err
	}
	for i := range d.Lengths {
		d.Lengths[i] = t/2 + rng.IntN(t-t/2+1)
		d.Valid += d.Lengths[i]
	}
	if err := tensor.PrefixMask(d.Mask, d.Lengths); err != nil {
		return nil, err
	}
	for i := range b {
		a := float32(rng.NormFloat64())
		for j := range t {
			k := i*t + j
			lp := -1 + 0.5*rng.NormFloat64()
			d.Logp.Data[k] = float32(lp)
			d.OldLogp.Data[k] = float32(lp + 0.1*rng.NormFloat64())
			d.RefLogp.Data[k] = float32(lp + 0.1*rng.NormFloat64())
			d.Advantages.Data[k] = a
			d.Rewards.Data[k] = float32(rng.NormFloat64())
			d.Values.Data[k] = float32(rng.NormFloat64())
		}
	}
	return d, nil
}
