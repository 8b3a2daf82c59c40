package conform

import (
	"encoding/json"
	"fmt"

	"github.com/rlpost/rlpost/grpo"
)

func init() {
	register("multi_reward_advantages", multiRewardAdvantages)
}

// MultiRewardRequest is the body of a multi_reward_advantages request:
// several reward functions per completion, combined as TRL's
// multi_objective_aggregation says (docs/conformance.md).
type MultiRewardRequest struct {
	Op string `json:"op"`
	// RewardsPerFunc[i][k] is reward function k of completion i (TRL's
	// rewards_per_func); RewardWeights are the w_k (default all 1).
	RewardsPerFunc [][]float64 `json:"rewards_per_func"`
	RewardWeights  []float64   `json:"reward_weights"`
	GroupSize      int         `json:"group_size"`
	GroupIDs       []int       `json:"group_ids"`
	Config         struct {
		Preset string  `json:"preset"`
		Scale  string  `json:"scale"`
		Std    string  `json:"std"`
		Eps    float64 `json:"eps"`
		// Aggregation is "sum_then_normalize" (TRL's default: GRPO on
		// Σ w_k r_k) or "normalize_then_sum" (GDPO:
		// grpo.DecoupledAdvantages).
		Aggregation string `json:"multi_objective_aggregation"`
	} `json:"config"`
}

// DecodeMultiReward turns a multi_reward_advantages request into the
// reward columns (one slice per reward function), weights, groups,
// configuration and whether the aggregation is decoupled.
func DecodeMultiReward(raw json.RawMessage) (cols [][]float64, weights []float64, g grpo.Groups, cfg grpo.Config, decoupled bool, err error) {
	def, err := groupPreset(configPreset(raw))
	if err != nil {
		return nil, nil, g, cfg, false, err
	}
	var req MultiRewardRequest
	c := &req.Config
	c.Scale, c.Std, c.Eps, c.Aggregation = def.Scale.String(), def.Std.String(), def.Eps, "sum_then_normalize"
	if err := decode(raw, &req); err != nil {
		return nil, nil, g, cfg, false, err
	}
	cfg = grpo.Config{Eps: c.Eps}
	if cfg.Scale, err = grpo.ParseScale(c.Scale); err != nil {
		return nil, nil, g, cfg, false, fmt.Errorf("config.scale: %w", err)
	}
	if cfg.Std, err = grpo.ParseStd(c.Std); err != nil {
		return nil, nil, g, cfg, false, fmt.Errorf("config.std: %w", err)
	}
	switch c.Aggregation {
	case "sum_then_normalize":
	case "normalize_then_sum":
		decoupled = true
	default:
		return nil, nil, g, cfg, false, fmt.Errorf("config.multi_objective_aggregation: unknown %q (want sum_then_normalize or normalize_then_sum)", c.Aggregation)
	}
	n := len(req.RewardsPerFunc)
	if n == 0 {
		return nil, nil, g, cfg, false, fmt.Errorf("rewards_per_func: no completions")
	}
	k := len(req.RewardsPerFunc[0])
	if k == 0 {
		return nil, nil, g, cfg, false, fmt.Errorf("rewards_per_func[0]: no reward function")
	}
	cols = make([][]float64, k)
	for j := range cols {
		cols[j] = make([]float64, n)
	}
	for i, row := range req.RewardsPerFunc {
		if len(row) != k {
			return nil, nil, g, cfg, false, fmt.Errorf("rewards_per_func[%d]: %d rewards, want %d", i, len(row), k)
		}
		for j, r := range row {
			cols[j][i] = r
		}
	}
	weights = req.RewardWeights
	if weights != nil && len(weights) != k {
		return nil, nil, g, cfg, false, fmt.Errorf("reward_weights: %d weights for %d reward functions", len(weights), k)
	}
	switch {
	case req.GroupIDs != nil && req.GroupSize != 0:
		return nil, nil, g, cfg, false, fmt.Errorf("give either group_size or group_ids, not both")
	case req.GroupIDs != nil:
		g, err = grpo.ByID(req.GroupIDs)
	case req.GroupSize == 0:
		err = fmt.Errorf("give group_size (contiguous groups) or group_ids")
	default:
		g = grpo.Contiguous(req.GroupSize)
	}
	return cols, weights, g, cfg, decoupled, err
}

func multiRewardAdvantages(raw json.RawMessage) (any, error) {
	cols, weights, g, cfg, decoupled, err := DecodeMultiReward(raw)
	if err != nil {
		return nil, err
	}
	adv := make([]float64, len(cols[0]))
	if decoupled {
		_, err = grpo.DecoupledAdvantages(adv, cols, weights, g, cfg)
	} else {
		sum := make([]float64, len(adv))
		for k, col := range cols {
			w := 1.0
			if weights != nil {
				w = weights[k]
			}
			for i, r := range col {
				sum[i] += w * r
			}
		}
		_, err = grpo.Advantages(adv, sum, g, cfg)
	}
	if err != nil {
		return nil, err
	}
	return struct {
		Advantages []float64 `json:"advantages"`
	}{adv}, nil
}
