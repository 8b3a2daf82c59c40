package conform

import (
	"encoding/json"
	"fmt"

	"github.com/rlpost/rlpost/grpo"
)

func init() {
	register("group_advantages", groupAdvantages)
}

// GroupAdvantagesRequest is the body of a group_advantages request.
type GroupAdvantagesRequest struct {
	Op        string    `json:"op"`
	Rewards   []float64 `json:"rewards"`
	GroupSize int       `json:"group_size"`
	GroupIDs  []int     `json:"group_ids"`
	Config    struct {
		Estimator string  `json:"estimator"`
		Scale     string  `json:"scale"`
		Std       string  `json:"std"`
		Eps       float64 `json:"eps"`
	} `json:"config"`
}

// DecodeGroupAdvantages turns a group_advantages request into rewards,
// groups and configuration.
func DecodeGroupAdvantages(raw json.RawMessage) ([]float64, grpo.Groups, grpo.Config, error) {
	var req GroupAdvantagesRequest
	c := &req.Config
	c.Estimator, c.Scale, c.Std, c.Eps = "grpo", "group", "unbiased", 1e-6
	if err := decode(raw, &req); err != nil {
		return nil, grpo.Groups{}, grpo.Config{}, err
	}
	cfg := grpo.Config{Eps: c.Eps}
	switch c.Estimator {
	case "grpo":
		cfg.Estimator = grpo.GRPO
	case "rloo":
		cfg.Estimator = grpo.RLOO
	default:
		return nil, grpo.Groups{}, cfg, fmt.Errorf("config.estimator: %q, want \"grpo\" or \"rloo\"", c.Estimator)
	}
	switch c.Scale {
	case "group":
		cfg.Scale = grpo.ScaleGroup
	case "batch":
		cfg.Scale = grpo.ScaleBatch
	case "none":
		cfg.Scale = grpo.ScaleNone
	default:
		return nil, grpo.Groups{}, cfg, fmt.Errorf("config.scale: %q, want \"group\", \"batch\" or \"none\"", c.Scale)
	}
	switch c.Std {
	case "unbiased":
		cfg.Std = grpo.Unbiased
	case "population":
		cfg.Std = grpo.Population
	default:
		return nil, grpo.Groups{}, cfg, fmt.Errorf("config.std: %q, want \"unbiased\" or \"population\"", c.Std)
	}
	switch {
	case req.GroupIDs != nil && req.GroupSize != 0:
		return nil, grpo.Groups{}, cfg, fmt.Errorf("give either group_size or group_ids, not both")
	case req.GroupIDs != nil:
		g, err := grpo.ByID(req.GroupIDs)
		return req.Rewards, g, cfg, err
	case req.GroupSize == 0:
		return nil, grpo.Groups{}, cfg, fmt.Errorf("give group_size (contiguous groups) or group_ids")
	}
	return req.Rewards, grpo.Contiguous(req.GroupSize), cfg, nil
}

func groupAdvantages(raw json.RawMessage) (any, error) {
	rewards, groups, cfg, err := DecodeGroupAdvantages(raw)
	if err != nil {
		return nil, err
	}
	adv := make([]float64, len(rewards))
	if _, err := grpo.Advantages(adv, rewards, groups, cfg); err != nil {
		return nil, err
	}
	return struct {
		Advantages []float64 `json:"advantages"`
	}{adv}, nil
}
