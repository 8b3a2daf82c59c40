package presets

import (
	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
)

// VAGENSettings are the settings of VAGEN-Full (VAGEN §5, Appendix B.2
// Table 22, Appendix D).
type VAGENSettings struct {
	// GAE is Bi-Level GAE (§5.2, Algorithm 2). γ_token = 1.0 (Table 22).
	// γ_turn, λ_turn and λ_token: the paper states none; rlpost takes the
	// released VAGEN-Full scripts' (high_level_gamma 0.95, one λ = 1 for
	// both levels). FinalToken is the released code's rule, the turn
	// advantage alone; gae.TurnAdvantagePlusDelta is Algorithm 2 line 18
	// as printed.
	GAE gae.BiLevelConfig
	// KLCoef is β = 0.001 of the per-token penalty −β·KL folded into the
	// rewards before GAE (Table 22; Algorithm 1 line 13, Algorithm 2 lines
	// 16 and 21): apply it with gae.AddKLPenalty, not in the loss.
	KLCoef float64
	// Loss is PPO's clipped objective averaged over the action tokens
	// (Algorithm 1 line 27: token mean), without a KL term (the KL sits in
	// the rewards). ε: the paper names it (Algorithm 1) but states no
	// value; rlpost uses 0.2, verl's default.
	Loss ppo.Config
	// Turn is the turn reward r_t = β_g·I_g + β_w·I_w + r_format + R(s_t,
	// a_t) (§5.3) with β_g = β_w = 0.5 (§5.3) and r_format = 0.5 (Tables
	// 16–20, "Format reward 0.5").
	Turn rewards.TurnConfig
	// SuccessReward is +10 and StepPenalty −0.1 per unfinished step (§2.3,
	// Tables 16–19); Sokoban adds BoxReward +1 per box on a target.
	SuccessReward, StepPenalty, BoxReward float64
	// Style is the reasoning format, Grounding-WorldModeling (§5.3: both
	// VAGEN-Base and VAGEN-Full use it; Table 5; verifiers "vagen_format").
	Style string
	// FormatParams are "vagen_format"'s parameters: the style and
	// {"visible": false}, Table 5's rule as written (each section present
	// and non-empty); rlpost's default, visible content in each section,
	// is a stricter guard, off in the preset.
	FormatParams verifiers.Params
	// Repetition is the anti-hacking repetition penalty of Appendix D.1.2:
	// F1 threshold 0.7 and penalty −0.1 (Sokoban); the heap size and memory
	// bound are rlpost's (rewards.VAGENRepetitionConfig).
	Repetition rewards.RepetitionConfig
	// ActorLR 1e-6 and CriticLR 1e-5; TrainBatch 128 and MiniBatch 32;
	// rollout Temperature 0.7 and TopP 0.95 (Table 22).
	ActorLR, CriticLR     float64
	TrainBatch, MiniBatch int
	Temperature, TopP     float64
}

// VAGEN returns VAGEN-Full's settings.
func VAGEN() VAGENSettings {
	return VAGENSettings{
		GAE:           gae.BiLevelConfig{GammaToken: 1, LambdaToken: 1, GammaTurn: 0.95, LambdaTurn: 1, FinalToken: gae.TurnAdvantage},
		KLCoef:        0.001,
		Loss:          ppo.DefaultConfig(),
		Turn:          rewards.TurnConfig{BetaG: 0.5, BetaW: 0.5, Format: 0.5},
		SuccessReward: 10,
		StepPenalty:   -0.1,
		BoxReward:     1,
		Style:         verifiers.VAGENGroundingWorldModeling,
		FormatParams:  verifiers.Params{"style": verifiers.VAGENGroundingWorldModeling, "visible": false},
		Repetition:    rewards.VAGENRepetitionConfig(),
		ActorLR:       1e-6,
		CriticLR:      1e-5,
		TrainBatch:    128,
		MiniBatch:     32,
		Temperature:   0.7,
		TopP:          0.95,
	}
}
