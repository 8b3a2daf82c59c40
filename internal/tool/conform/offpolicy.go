package conform

import (
	"encoding/json"

	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	register("offpolicy_advantages", offpolicyAdvantages)
}

// OffPolicyAdvantagesRequest is the body of an offpolicy_advantages request.
type OffPolicyAdvantagesRequest struct {
	Op        string    `json:"op"`
	Rewards   []float64 `json:"rewards"`
	Baselines []float64 `json:"baselines"`
	Config    struct {
		Eps      float64 `json:"eps"`
		StdFloor float64 `json:"std_floor"`
	} `json:"config"`
}

// DecodeOffPolicyAdvantages turns an offpolicy_advantages request into
// rewards, baselines and configuration, with docs/conformance.md's defaults
// ε = 1e-6 and std_floor = replay.DefaultStdFloor (the wire format keeps the
// guard on unless a request sets "std_floor": 0; the library's own default,
// replay.DefaultAdvantageConfig, is Eq. 11 without it).
func DecodeOffPolicyAdvantages(raw json.RawMessage) (rewards, baselines []float64, cfg replay.AdvantageConfig, err error) {
	var req OffPolicyAdvantagesRequest
	req.Config.Eps, req.Config.StdFloor = replay.DefaultAdvantageConfig().Eps, replay.DefaultStdFloor
	if err := decode(raw, &req); err != nil {
		return nil, nil, cfg, err
	}
	switch {
	case req.Rewards == nil:
		return nil, nil, cfg, tensor.Errorf(tensor.ErrEmpty, "rewards", nil, "missing")
	case req.Baselines == nil:
		return nil, nil, cfg, tensor.Errorf(tensor.ErrEmpty, "baselines", nil, "missing")
	}
	return req.Rewards, req.Baselines, replay.AdvantageConfig{Eps: req.Config.Eps, StdFloor: req.Config.StdFloor}, nil
}

func offpolicyAdvantages(raw json.RawMessage) (any, error) {
	rewards, baselines, cfg, err := DecodeOffPolicyAdvantages(raw)
	if err != nil {
		return nil, err
	}
	adv := make([]float64, len(rewards))
	if _, err := replay.Advantages(adv, rewards, baselines, cfg); err != nil {
		return nil, err
	}
	return struct {
		Advantages []float64 `json:"advantages"`
	}{adv}, nil
}
