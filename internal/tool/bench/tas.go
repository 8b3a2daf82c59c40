package bench

import (
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	Register("tas_weights", "cpu", tasWeights)
}

// tasWeights measures TAS weights with λ = 0.3 (parabolic) for the batch's
// mask.
func tasWeights(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := tas.DefaultConfig()
	w, err := tensor.New[float32](d.Shape.B, d.Shape.T)
	if err != nil {
		return nil, nil, err
	}
	return func() error {
		return tas.Weights(w, d.Mask, cfg)
	}, nil, nil
}
