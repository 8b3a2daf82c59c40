package ppo_test

import (
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// gradBatch views g as the [B, T] gradient destination of a policy-loss
// call on in, for tests that keep their gradients in plain slices.
func gradBatch[F tensor.Float](g []F, in ppo.Inputs[F]) tensor.Batch[F] {
	return tensor.Batch[F]{Shape: in.Logp.Shape, Data: g}
}
