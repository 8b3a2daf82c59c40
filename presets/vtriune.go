package presets

import (
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
)

// VTriuneSettings are the settings of V-Triune ("One RL to See Them All").
type VTriuneSettings struct {
	// Advantage is GRPO's (§4.1, "We use GRPO (Shao et al., 2024) in all
	// main experiments"). The std convention and ε: the paper states none;
	// rlpost keeps its defaults (unbiased std, ε = 1e-6).
	Advantage grpo.Config
	// Loss: the paper states no clip range, KL coefficient or aggregation;
	// rlpost uses the loss of the GRPO paper it cites (grpo.GRPOLoss: ε 0.2,
	// β 0.04 with k3, per-sequence token mean).
	Loss ppo.Config
	// Route is the sample-level routing of §3.1 and Fig. 8; its reward is
	// α_acc·R_acc + α_format·R_format (§3.2, RouteSpec.Combine). The
	// weights come from each sample's accuracy_ratio and format_ratio; the
	// paper states no default, rlpost's are 1.0 and 0.1
	// (rewards.DefaultRouteSpec), which a sample's metadata overrides.
	Route rewards.RouteSpec
	// FormatVerifier is Eq. 2's format reward, 0.25 for each of <think>,
	// </think>, <answer>, </answer> that occurs once.
	FormatVerifier string
	// FormatParams are the format verifier's parameters: {"visible":
	// false}, Eq. 2's rule as written (a tag counts when it occurs once,
	// whatever its section holds). rlpost's default, a section must hold
	// visible content, is stricter; it is a guard, off in the preset.
	FormatParams verifiers.Params
	// DynamicIoU is the threshold ε of Eq. 3 over training: 0.85 for the
	// first 10 % of steps, 0.95 for the next 15 %, 0.99 after (§4.5).
	DynamicIoU verifiers.IoUSchedule
	// FixedIoUThreshold is the auxiliary fixed-threshold IoU diagnostic's,
	// 0.5: IoU@50, the threshold §4.5 and Appendix J monitor (§3.3 names
	// the diagnostic without a threshold).
	FixedIoUThreshold float64
	// RolloutBatch is 1024 prompts per rollout and GroupSize 8 responses
	// per prompt; Temperature 1.0, TopP 1.0, MaxLength 2048 (§4.1).
	RolloutBatch, GroupSize int
	Temperature, TopP       float64
	MaxLength               int
	// UpdatesPerRollout is 8 optimisation steps per rollout in the
	// off-policy setting (§4.2, "7B off-policy with 8 optimization steps
	// per rollout"); 1 is the on-policy variant.
	UpdatesPerRollout int
	// Epochs is 3 for the final models (§4.1, §4.3).
	Epochs int
	// FreezeVisionEncoder: only the LLM layers train (§4.1, §4.6).
	FreezeVisionEncoder bool
}

// VTriune returns V-Triune's settings.
func VTriune() VTriuneSettings {
	return VTriuneSettings{
		Advantage:           grpo.DefaultConfig(),
		Loss:                grpo.GRPOLoss(),
		Route:               rewards.DefaultRouteSpec(),
		FormatVerifier:      "format_tags",
		FormatParams:        verifiers.Params{"visible": false},
		DynamicIoU:          verifiers.DynamicIoUSchedule(),
		FixedIoUThreshold:   rewards.DefaultFixedIoUThreshold,
		RolloutBatch:        1024,
		GroupSize:           8,
		Temperature:         1.0,
		TopP:                1.0,
		MaxLength:           2048,
		UpdatesPerRollout:   8,
		Epochs:              3,
		FreezeVisionEncoder: true,
	}
}
