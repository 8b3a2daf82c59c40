package conform

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	register("appo_weights", appoWeights)
}

// APPOWeightsRequest is the body of an appo_weights request.
type APPOWeightsRequest struct {
	Op            string        `json:"op"`
	Rewards       []float64     `json:"rewards"`
	Attention     [][][]float64 `json:"attention"`
	Distributions [][][]float64 `json:"distributions"`
	Config        struct {
		Tau      float64 `json:"tau"`
		K1       int     `json:"k1"`
		K2       int     `json:"k2"`
		K3       int     `json:"k3"`
		Alpha    float64 `json:"alpha"`
		Strategy string  `json:"strategy"`
	} `json:"config"`
}

// DecodeAPPOWeights turns an appo_weights request into the library's inputs
// (the distributions held densely) and configuration, with
// docs/conformance.md's defaults for omitted fields. Every distribution is
// checked, not only those the computation reads, so that a bad request is
// reported whatever the attention selects.
func DecodeAPPOWeights(raw json.RawMessage) (appo.Inputs[float64], appo.Config, error) {
	var req APPOWeightsRequest
	def := appo.DefaultConfig()
	c := &req.Config
	c.Tau, c.K1, c.K2, c.K3, c.Alpha, c.Strategy = def.Tau, def.K1, def.K2, def.K3, def.Alpha, def.Strategy.String()
	if err := decode(raw, &req); err != nil {
		return appo.Inputs[float64]{}, appo.Config{}, err
	}
	cfg := def
	cfg.Tau, cfg.K1, cfg.K2, cfg.K3, cfg.Alpha = c.Tau, c.K1, c.K2, c.K3, c.Alpha
	var err error
	if cfg.Strategy, err = appo.ParseStrategy(c.Strategy); err != nil {
		return appo.Inputs[float64]{}, cfg, fmt.Errorf("config.strategy: %w", err)
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{"rewards", req.Rewards == nil}, {"attention", req.Attention == nil}, {"distributions", req.Distributions == nil}} {
		if f.missing {
			return appo.Inputs[float64]{}, cfg, tensor.Errorf(tensor.ErrEmpty, f.name, nil, "missing")
		}
	}
	in := appo.Inputs[float64]{Rewards: req.Rewards, Attention: make([]tensor.Batch[float64], len(req.Attention))}
	for i, rows := range req.Attention {
		if in.Attention[i], err = tensor.FromRows[float64](rows); err != nil {
			var ae *tensor.ArgError
			if errors.As(err, &ae) && len(ae.Index) == 1 {
				ae.Arg, ae.Index = "attention", tensor.At(i, ae.Index[0])
			}
			return in, cfg, err
		}
	}
	probs, lengths, err := flatten("distributions", req.Distributions)
	if err != nil {
		return in, cfg, err
	}
	dense, err := appo.NewDense(probs, lengths)
	if err != nil {
		return in, cfg, err
	}
	if err := dense.Check(cfg.SumTol); err != nil {
		return in, cfg, err
	}
	in.Dists = dense
	return in, cfg, nil
}

// flatten stacks ragged [G][L_i][V] rows into one [ΣL_i, V] batch and the
// lengths L_i.
func flatten(name string, x [][][]float64) (tensor.Batch[float64], []int, error) {
	lengths := make([]int, len(x))
	total, v := 0, -1
	for i, rows := range x {
		lengths[i] = len(rows)
		total += len(rows)
		for j, row := range rows {
			if v < 0 {
				v = len(row)
			} else if len(row) != v {
				return tensor.Batch[float64]{}, nil, tensor.Errorf(tensor.ErrShape, name, tensor.At(i, j), "length %d, want %d like the first row", len(row), v)
			}
		}
	}
	b, err := tensor.New[float64](total, max(v, 0))
	if err != nil {
		return b, nil, err
	}
	k := 0
	for _, rows := range x {
		for _, row := range rows {
			k += copy(b.Data[k:], row)
		}
	}
	return b, lengths, nil
}

func appoWeights(raw json.RawMessage) (any, error) {
	in, cfg, err := DecodeAPPOWeights(raw)
	if err != nil {
		return nil, err
	}
	w := make([]float64, totalTokens(in))
	res, err := appo.Weights(w, in, cfg)
	if err != nil {
		return nil, err
	}
	weights := make([][]float64, len(in.Attention))
	k := 0
	for i, a := range in.Attention {
		weights[i] = w[k : k+a.B : k+a.B]
		k += a.B
	}
	frames := append([]int{}, res.Frames...)
	return struct {
		Weights [][]float64 `json:"weights"`
		Frames  []int       `json:"frames"`
	}{weights, frames}, nil
}

func totalTokens(in appo.Inputs[float64]) int {
	n := 0
	for _, a := range in.Attention {
		n += a.B
	}
	return n
}
