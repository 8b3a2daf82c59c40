package presets

import (
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/verifiers"
)

// LLaVAOneVision15Settings are the settings of LLaVA-OneVision-1.5's RL
// write-up on AReaL ("Shared GRPO Configuration", "GRPO Algorithm & AReaL
// Async Framework").
type LLaVAOneVision15Settings struct {
	// Loss is AReaL's decoupled PPO: ratio against π_prox clipped to
	// [1 − 0.2, 1 + 0.28] ("PPO Clip ε=0.2, ε_high=0.28"), behaviour weight
	// exp(log π_prox − log π_behave) truncated at 5.0 ("cap = 5.0"), no KL
	// ("KL Penalty 0.0 (No constraint)"). The loss aggregation: the write-up
	// states none; rlpost uses the token mean of DAPO's loss.
	Loss ppo.Config
	// Advantage is Â = (r − μ_group)/(σ_group + ε), ε = 1e-6 ("mean = 0.70,
	// std = 0.41, ε = 1e-6"), with the population std the worked example
	// follows (grpo.AReaLAdvantages).
	Advantage grpo.Config
	// Shaping is r' = (r_task − 0.5)·10 ("Reward Scale=10.0, Bias=-0.5").
	// The write-up gives no clip; rlpost's ±20 never binds on rewards in
	// [0, 1].
	Shaping grpo.Shaping
	// MaxStaleness is η = 4 ("max_head_offpolicyness η = 4"): a sample at
	// most 4 versions old is used (grpo.FilterStale).
	MaxStaleness int64
	// GroupSize is G = 16 samples per prompt and BatchSize 32 prompts
	// ("BS=32, 16 samples/group").
	GroupSize, BatchSize int
	// LearningRate 2e-6 and WeightDecay 0.01 of Adam ("Adam (lr=2e-6,
	// wd=0.01)"); WarmupFraction 0.001 of a constant schedule ("Constant
	// w/ 0.1% warmup").
	LearningRate, WeightDecay, WarmupFraction float64
	// MaxTokens 4096 and Temperature 1.0 ("Max Tokens 4096 (temp=1.0)");
	// Epochs 30 ("Epochs / Dtype 30 / bfloat16").
	MaxTokens   int
	Temperature float64
	Epochs      int
	// FormatVerifier is the cross-cutting format reward, exactly one
	// <think> block, at least one \boxed{}, boxed content ≤ BoxedMaxRatio =
	// 20 % of the response ("Format Reward (cross-cutting)").
	FormatVerifier string
	BoxedMaxRatio  float64
	// FormatParams are the format verifier's parameters: {"visible":
	// false}, the write-up's rule as written; rlpost's default (the <think>
	// block and the box must hold visible content) is a stricter guard,
	// off in the preset.
	FormatParams verifiers.Params
}

// LLaVAOneVision15 returns LLaVA-OneVision-1.5's RL settings.
func LLaVAOneVision15() LLaVAOneVision15Settings {
	return LLaVAOneVision15Settings{
		Loss:           grpo.DecoupledLoss(),
		Advantage:      grpo.AReaLAdvantages(),
		Shaping:        grpo.AReaLShaping(),
		MaxStaleness:   grpo.AReaLMaxStaleness,
		GroupSize:      16,
		BatchSize:      32,
		LearningRate:   2e-6,
		WeightDecay:    0.01,
		WarmupFraction: 0.001,
		MaxTokens:      4096,
		Temperature:    1.0,
		Epochs:         30,
		FormatVerifier: "think_boxed_format",
		BoxedMaxRatio:  0.2,
		FormatParams:   verifiers.Params{"visible": false},
	}
}
