package ppo_test

import (
	"github.com/rlpost/rlpost/internal/testkit/rulecases"
	"math"
	"math/rand/v2"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// batchSpec describes a random policy-loss batch.
type batchSpec struct {
	b, t                int
	prox, ref, weights  bool
	spread              float64 // std of logp − old_logp
	emptyRow, nonPrefix bool
	garbageInPadding    bool // NaN/−Inf at mask-0 positions
	seed                uint64
}

// randomInputs draws a batch as float64; masks are random (non-prefix when
// asked), one row may be empty, and padding may hold garbage that must never
// be read.
func randomInputs(s batchSpec) ppo.Inputs[float64] {
	rng := rand.New(rand.NewPCG(s.seed, 7))
	mk := func() tensor.Batch[float64] { return tensor.MustNew[float64](s.b, s.t) }
	in := ppo.Inputs[float64]{Logp: mk(), OldLogp: mk(), Advantages: mk(), Mask: mk()}
	if s.prox {
		in.ProxLogp = mk()
	}
	if s.ref {
		in.RefLogp = mk()
	}
	if s.weights {
		in.TokenWeights = mk()
	}
	for b := range s.b {
		n := 1 + rng.IntN(s.t)
		a := rng.NormFloat64()
		for t := range s.t {
			k := b*s.t + t
			valid := t < n
			if s.nonPrefix {
				valid = rng.IntN(3) != 0
			}
			if s.emptyRow && b == 0 {
				valid = false
			}
			lp := -0.2 - rng.ExpFloat64()
			in.Logp.Data[k] = lp
			in.OldLogp.Data[k] = lp + s.spread*rng.NormFloat64()
			in.Advantages.Data[k] = a + 0.3*rng.NormFloat64()
			if s.prox {
				in.ProxLogp.Data[k] = lp + s.spread*rng.NormFloat64()
			}
			if s.ref {
				in.RefLogp.Data[k] = lp + 0.5*rng.NormFloat64()
			}
			if s.weights {
				in.TokenWeights.Data[k] = 0.5 + rng.Float64()
			}
			if valid {
				in.Mask.Data[k] = 1
			} else if s.garbageInPadding {
				in.Logp.Data[k] = math.Inf(-1)
				in.OldLogp.Data[k] = math.NaN()
				in.Advantages.Data[k] = math.NaN()
				if s.ref {
					in.RefLogp.Data[k] = math.Inf(1)
				}
				if s.weights {
					in.TokenWeights.Data[k] = -1
				}
			}
		}
	}
	return in
}

// to32 converts inputs to float32 storage.
var to32 = rulecases.To32

// rowsOf returns rows [lo, hi) of x as a batch sharing storage.
func rowsOf[F tensor.Float](x tensor.Batch[F], lo, hi int) tensor.Batch[F] {
	if x.IsZero() {
		return x
	}
	return tensor.Batch[F]{Shape: tensor.Shape{B: hi - lo, T: x.T}, Data: x.Data[lo*x.T : hi*x.T]}
}

// sliceInputs returns rows [lo, hi) of every batch of in.
func sliceInputs[F tensor.Float](in ppo.Inputs[F], lo, hi int) ppo.Inputs[F] {
	return ppo.Inputs[F]{Logp: rowsOf(in.Logp, lo, hi), OldLogp: rowsOf(in.OldLogp, lo, hi),
		Advantages: rowsOf(in.Advantages, lo, hi), Mask: rowsOf(in.Mask, lo, hi),
		ProxLogp: rowsOf(in.ProxLogp, lo, hi), RefLogp: rowsOf(in.RefLogp, lo, hi),
		TokenWeights: rowsOf(in.TokenWeights, lo, hi)}
}

// clone deep-copies in, so a test can perturb one copy.
func clone(in ppo.Inputs[float64]) ppo.Inputs[float64] {
	c := func(x tensor.Batch[float64]) tensor.Batch[float64] {
		if x.IsZero() {
			return x
		}
		return tensor.Batch[float64]{Shape: x.Shape, Data: append([]float64(nil), x.Data...)}
	}
	return ppo.Inputs[float64]{Logp: c(in.Logp), OldLogp: c(in.OldLogp), Advantages: c(in.Advantages), Mask: c(in.Mask),
		ProxLogp: c(in.ProxLogp), RefLogp: c(in.RefLogp), TokenWeights: c(in.TokenWeights)}
}

// relClose reports |a − b| ≤ rel·max(|a|, |b|) + abs.
func relClose(a, b, rel, abs float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))+abs
}

// like wraps a flat gradient slice as a batch of x's shape, for tests that
// index the gradient by its flat position.
func like[F tensor.Float](g []F, x tensor.Batch[F]) tensor.Batch[F] {
	return tensor.Batch[F]{Shape: x.Shape, Data: g}
}
