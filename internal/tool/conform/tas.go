package conform

import (
	"encoding/json"
	"fmt"

	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	register("tas_weights", tasWeights)
}

// TASWeightsRequest is the body of a tas_weights request.
type TASWeightsRequest struct {
	Op     string      `json:"op"`
	Mask   [][]float64 `json:"mask"`
	Config struct {
		Lambda float64 `json:"lambda"`
		Shape  string  `json:"shape"`
	} `json:"config"`
}

// DecodeTASWeights turns a tas_weights request into a mask and
// configuration, with docs/conformance.md's defaults (λ = 0.3, parabolic).
func DecodeTASWeights(raw json.RawMessage) (tensor.Batch[float64], tas.Config, error) {
	var req TASWeightsRequest
	def := tas.DefaultConfig()
	req.Config.Lambda, req.Config.Shape = def.Lambda, def.Shape.String()
	if err := decode(raw, &req); err != nil {
		return tensor.Batch[float64]{}, tas.Config{}, err
	}
	var bs batches
	mask := bs.required("mask", req.Mask)
	if bs.err != nil {
		return mask, tas.Config{}, bs.err
	}
	shape, err := tas.ParseCurve(req.Config.Shape)
	if err != nil {
		return mask, tas.Config{}, fmt.Errorf("config.shape: %w", err)
	}
	cfg := tas.Config{Lambda: req.Config.Lambda, Shape: shape}
	if cfg == (tas.Config{}) {
		// λ = 0 written out in JSON is a valid request for weights of 1;
		// the Go zero Config is rejected as a forgotten default, and
		// Uniform is the same weights.
		cfg.Shape = tas.Uniform
	}
	return mask, cfg, nil
}

func tasWeights(raw json.RawMessage) (any, error) {
	mask, cfg, err := DecodeTASWeights(raw)
	if err != nil {
		return nil, err
	}
	w := tensor.MustNew[float64](mask.B, mask.T)
	if err := tas.Weights(w, mask, cfg); err != nil {
		return nil, err
	}
	return struct {
		Weights [][]float64 `json:"weights"`
	}{rows(w)}, nil
}
