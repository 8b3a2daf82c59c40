package presets

import (
	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
)

// APPOSettings are the settings of APPO (arXiv 2602.23823).
type APPOSettings struct {
	// Weights are the token-weight knobs: τ = 0.5 (§4.1 "the reward
	// threshold τ in Eq. 3 is set to 0.5", applied to the accuracy reward);
	// K1 = 15, K2 = 5, K3 = 64 (Algorithm 1 line 5, "e.g., 15, 5, 64");
	// α = 1.7 (§4.5, best of the ablation over 1.2–2.0); the Soft strategy
	// (§9 Table E, best of Hard/Soft/All).
	Weights appo.Config
	// K2AblationBest is the K2 of the ablation's optimum, 3 (§4.5: "there
	// is an optimal value for K2, which is K2 = 3"). Weights.K2 keeps
	// Algorithm 1's 5; set Weights.K2 = K2AblationBest to follow the
	// ablation.
	K2AblationBest int
	// AttentionLayers is how many last layers' attentions are averaged
	// (Eq. 4): 3 (§4.5, "using the last three layers might be the optimal
	// choice").
	AttentionLayers int
	// Loss is DAPO's without dynamic sampling: no KL term (§3.2,
	// "Following DAPO, we remove the KL divergence constraint"), token
	// mean over the batch (§3.2, outputs normalised "to balance their
	// contributions", DAPO's token-level loss), clip-higher ε_high = 0.28
	// (§7 "For DAPO, the clip higher is set to 0.28"; §4.1 "APPO uses the
	// same clip-higher strategy as DAPO"). ε_low: the paper states none;
	// rlpost uses 0.2, DAPO's.
	Loss ppo.Config
	// DynamicSampling is false (§4.1, "dynamic sampling strategy was not
	// used").
	DynamicSampling bool
	// Advantage is GRPO's group standardisation (§3.1, Eq. 1). The std
	// convention and ε: the paper states none; rlpost keeps its defaults
	// (unbiased std, ε = 1e-6).
	Advantage grpo.Config
	// GRPOBaselineKL is the KL coefficient of the GRPO baseline APPO is
	// compared with, 0.01 (§7, Table C); APPO itself has none.
	GRPOBaselineKL float64
	// AccuracyWeight, FormatWeight and IoUWeight weigh the three rewards of
	// the NExT-GQA runs: 0.9, 0.1 and 0.9 (§4.1, "The weights of three
	// rewards are 0.9, 0.1, and 0.9"); the IoU reward is the temporal IoU
	// (verifiers "temporal_iou").
	AccuracyWeight, FormatWeight, IoUWeight float64
	// GroupSize is the rollouts per sample, 8; BatchSize the samples per
	// step, 16; LearningRate 1e-6; Temperature and TopP of rollouts 1.0 and
	// 1.0; MaxResponseTokens 512 (§4.1, §7, Table C).
	GroupSize, BatchSize int
	LearningRate         float64
	Temperature, TopP    float64
	MaxResponseTokens    int
}

// APPO returns APPO's settings.
func APPO() APPOSettings {
	loss := grpo.DAPOLoss()
	return APPOSettings{
		Weights:           appo.Config{Tau: 0.5, K1: 15, K2: 5, K3: 64, Alpha: 1.7, Strategy: appo.Soft, SumTol: appo.DefaultConfig().SumTol},
		K2AblationBest:    3,
		AttentionLayers:   3,
		Loss:              loss,
		DynamicSampling:   false,
		Advantage:         grpo.DefaultConfig(),
		GRPOBaselineKL:    0.01,
		AccuracyWeight:    0.9,
		FormatWeight:      0.1,
		IoUWeight:         0.9,
		GroupSize:         8,
		BatchSize:         16,
		LearningRate:      1e-6,
		Temperature:       1.0,
		TopP:              1.0,
		MaxResponseTokens: 512,
	}
}
