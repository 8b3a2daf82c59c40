package presets_test

import (
	"context"
	"math"
	"testing"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/presets"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// knob is one setting and the value its paper states (or, marked chosen,
// the value rlpost picked where the paper states none).
type knob struct {
	name      string
	got, want any
	chosen    bool
}

func check(t *testing.T, knobs []knob) {
	t.Helper()
	for _, k := range knobs {
		if k.got != k.want {
			what := "the paper states"
			if k.chosen {
				what = "rlpost chose (the paper states none)"
			}
			t.Errorf("%s = %v, %s %v", k.name, k.got, what, k.want)
		}
	}
}

func TestAVATAR(t *testing.T) {
	p := presets.AVATAR()
	o := p.Objective
	check(t, []knob{
		{"λ_TAS (§5)", o.TAS.Lambda, 0.3, false},
		{"TAS shape (Eq. 6)", o.TAS.Shape, tas.Parabolic, false},
		{"α (§5)", o.Alpha, 0.6, false},
		{"β (§5)", o.Loss.KLCoef, 0.1, false},
		{"aggregation (Listing 1: token sum / token count)", o.Loss.Mode, ppo.TokenMean, false},
		{"ε_low", o.Loss.ClipLow, 0.2, true},
		{"ε_high", o.Loss.ClipHigh, 0.2, true},
		{"KL estimator", o.Loss.KLEstimator, ppo.K3, true},
		{"advantage (Eq. 1)", o.Group.Estimator, grpo.GRPO, false},
		{"advantage scale (Eq. 1: σ of the group)", o.Group.Scale, grpo.ScaleGroup, false},
		{"std convention", o.Group.Std, grpo.Unbiased, true},
		{"ε_adv", o.Group.Eps, 1e-6, true},
		{"ε of Eq. 11", o.Off.Eps, 1e-6, true},
		{"σ_off floor (Eq. 11 has none)", o.Off.StdFloor, 0.0, false},
		{"KL on J_off (Eq. 3: the same form as Eq. 2)", o.FreshOnlyKL, false, false},
		{"buffer size (§4.1)", p.Buffer.Capacity, 10000, false},
		{"Easy share (§4.1)", p.Buffer.Shares[replay.Easy], 0.25, false},
		{"Medium share (§4.1)", p.Buffer.Shares[replay.Medium], 0.35, false},
		{"Hard share (§4.1)", p.Buffer.Shares[replay.Hard], 0.40, false},
		{"VCRS window (§4.4)", p.Buffer.Window, 20, false},
		{"staleness guard", p.Buffer.MaxStaleness, int64(0), true},
		{"hint config", p.Hint, replay.DefaultHintConfig(), true},
		{"on-policy samples (§4.1, Fig. 7)", p.OnPolicy, 4, false},
		{"off-policy samples (§4.1, Fig. 7)", p.OffPolicy, 4, false},
		{"LoRA r (§5)", p.LoRARank, 16, false},
		{"LoRA α (§5)", p.LoRAAlpha, 32, false},
		{"frames (§5)", p.Frames, 32, false},
	})
	want := [3][][2]any{
		{{"format", 0.5}, {"acc", 0.5}},
		{{"format", 0.2}, {"acc", 0.4}, {"self", 0.4}},
		{{"format", 0.2}, {"acc", 0.4}, {"judge", 0.4}},
	}
	for s, terms := range want {
		require.Equal(t, len(terms), len(p.Stages[s]), "stage S%d = %v (Table 1)", s+1, p.Stages[s])
		for i, w := range terms {
			assert.Equal(t, w[0], p.Stages[s][i].Name, "stage S%d term %d = %v, Table 1 has %v", s+1, i, p.Stages[s][i], w)
			assert.Equal(t, w[1], p.Stages[s][i].Weight, "stage S%d term %d = %v, Table 1 has %v", s+1, i, p.Stages[s][i], w)
		}
	}
	assert.NoError(t, o.Validate())
	assert.NoError(t, p.Buffer.Validate())
}

func TestAPPO(t *testing.T) {
	p := presets.APPO()
	check(t, []knob{
		{"τ (§4.1)", p.Weights.Tau, 0.5, false},
		{"K1 (Alg. 1)", p.Weights.K1, 15, false},
		{"K2 (Alg. 1)", p.Weights.K2, 5, false},
		{"K2, ablation's best (§4.5)", p.K2AblationBest, 3, false},
		{"K3 (Alg. 1)", p.Weights.K3, 64, false},
		{"α (§4.5)", p.Weights.Alpha, 1.7, false},
		{"strategy (Table E)", p.Weights.Strategy, appo.Soft, false},
		{"attention layers (§4.5)", p.AttentionLayers, 3, false},
		{"KL (§3.2: removed)", p.Loss.KLCoef, 0.0, false},
		{"ε_high (§7)", p.Loss.ClipHigh, 0.28, false},
		{"ε_low", p.Loss.ClipLow, 0.2, true},
		{"aggregation (§3.2, DAPO's)", p.Loss.Mode, ppo.TokenMean, false},
		{"dynamic sampling (§4.1)", p.DynamicSampling, false, false},
		{"std convention", p.Advantage.Std, grpo.Unbiased, true},
		{"GRPO baseline KL (§7)", p.GRPOBaselineKL, 0.01, false},
		{"accuracy weight (§4.1)", p.AccuracyWeight, 0.9, false},
		{"format weight (§4.1)", p.FormatWeight, 0.1, false},
		{"IoU weight (§4.1)", p.IoUWeight, 0.9, false},
		{"rollouts (§4.1)", p.GroupSize, 8, false},
		{"batch (§4.1)", p.BatchSize, 16, false},
		{"learning rate (§4.1)", p.LearningRate, 1e-6, false},
		{"temperature (§7)", p.Temperature, 1.0, false},
		{"top-p (§7)", p.TopP, 1.0, false},
		{"max response tokens (§7)", p.MaxResponseTokens, 512, false},
	})
	assert.NoError(t, p.Weights.Validate())
}

func TestLLaVAOneVision15(t *testing.T) {
	p := presets.LLaVAOneVision15()
	check(t, []knob{
		{"ε", p.Loss.ClipLow, 0.2, false},
		{"ε_high", p.Loss.ClipHigh, 0.28, false},
		{"behaviour cap", p.Loss.BehaveCap, 5.0, false},
		{"behaviour cap mode (clamp max)", p.Loss.BehaveCapMode, ppo.CapTruncate, false},
		{"KL", p.Loss.KLCoef, 0.0, false},
		{"aggregation", p.Loss.Mode, ppo.TokenMean, true},
		{"std convention (worked example)", p.Advantage.Std, grpo.Population, false},
		{"advantage ε", p.Advantage.Eps, 1e-6, false},
		{"reward bias", p.Shaping.Bias, -0.5, false},
		{"reward scale", p.Shaping.Scale, 10.0, false},
		{"reward clip", p.Shaping.Clip, 20.0, true},
		{"η", p.MaxStaleness, int64(4), false},
		{"G", p.GroupSize, 16, false},
		{"batch", p.BatchSize, 32, false},
		{"lr", p.LearningRate, 2e-6, false},
		{"weight decay", p.WeightDecay, 0.01, false},
		{"warmup", p.WarmupFraction, 0.001, false},
		{"max tokens", p.MaxTokens, 4096, false},
		{"temperature", p.Temperature, 1.0, false},
		{"epochs", p.Epochs, 30, false},
		{"format verifier", p.FormatVerifier, "think_boxed_format", false},
		{"boxed share", p.BoxedMaxRatio, 0.2, false},
	})
	// The worked example: rewards 1, 1, 1, 0.5, 0 → mean 0.70, std 0.41
	// (population 0.400, printed rounded up).
	adv := make([]float64, 5)
	_, err := grpo.Advantages(adv, []float64{1, 1, 1, 0.5, 0}, grpo.Contiguous(5), p.Advantage)
	require.NoError(t, err)
	if a := adv[0]; a < 0.72 || a > 0.76 {
		t.Errorf("A for r = 1: %v, the write-up prints +0.73", a)
	}
	if a := adv[4]; a < -1.76 || a > -1.70 {
		t.Errorf("A for r = 0: %v, the write-up prints −1.71", a)
	}
	_, err = verifiers.New(p.FormatVerifier, nil)
	assert.NoError(t, err)
}

func TestVTriune(t *testing.T) {
	p := presets.VTriune()
	check(t, []knob{
		{"estimator (§4.1: GRPO)", p.Advantage.Estimator, grpo.GRPO, false},
		{"std convention", p.Advantage.Std, grpo.Unbiased, true},
		{"ε_low", p.Loss.ClipLow, 0.2, true},
		{"KL β", p.Loss.KLCoef, 0.04, true},
		{"α_acc default", p.Route.AccuracyRatio, 1.0, true},
		{"α_format default", p.Route.FormatRatio, 0.1, true},
		{"format reward (Eq. 2)", p.FormatVerifier, "format_tags", false},
		{"fixed IoU threshold (IoU@50)", p.FixedIoUThreshold, 0.5, false},
		{"rollout batch (§4.1)", p.RolloutBatch, 1024, false},
		{"group (§4.1)", p.GroupSize, 8, false},
		{"temperature (§4.1)", p.Temperature, 1.0, false},
		{"top-p (§4.1)", p.TopP, 1.0, false},
		{"max length (§4.1)", p.MaxLength, 2048, false},
		{"updates per rollout (§4.2)", p.UpdatesPerRollout, 8, false},
		{"epochs (§4.1)", p.Epochs, 3, false},
		{"frozen vision encoder (§4.1)", p.FreezeVisionEncoder, true, false},
	})
	// §4.5: 0.85, 0.95, 0.99 over the first 10 %, the next 15 %, the rest.
	s := p.DynamicIoU
	if len(s.Until) != 2 || s.Until[0] != 0.10 || s.Until[1] != 0.25 || len(s.Thresholds) != 3 ||
		s.Thresholds[0] != 0.85 || s.Thresholds[1] != 0.95 || s.Thresholds[2] != 0.99 {
		t.Errorf("Dynamic IoU %+v", s)
	}
	// §3.2: the reward is α_acc·R_acc + α_format·R_format, not normalised.
	if r := p.Route.Combine(1, 1); r != 1.1 {
		t.Errorf("Combine(1, 1) = %v, want 1.1", r)
	}
	assert.Equal(t, float64(1), verifiers.FormatTags("<think>a</think><answer>b</answer>"), "Eq. 2 format reward")
}

func TestVAGEN(t *testing.T) {
	p := presets.VAGEN()
	check(t, []knob{
		{"γ_token (Table 22)", p.GAE.GammaToken, 1.0, false},
		{"γ_turn", p.GAE.GammaTurn, 0.95, true},
		{"λ_turn", p.GAE.LambdaTurn, 1.0, true},
		{"λ_token", p.GAE.LambdaToken, 1.0, true},
		{"final-token rule (released code)", p.GAE.FinalToken, gae.TurnAdvantage, true},
		{"KL β (Table 22)", p.KLCoef, 0.001, false},
		{"KL in the loss", p.Loss.KLCoef, 0.0, false},
		{"aggregation (Alg. 1 line 27)", p.Loss.Mode, ppo.TokenMean, false},
		{"ε", p.Loss.ClipLow, 0.2, true},
		{"β_g (§5.3)", p.Turn.BetaG, 0.5, false},
		{"β_w (§5.3)", p.Turn.BetaW, 0.5, false},
		{"format reward (Tables 16–20)", p.Turn.Format, 0.5, false},
		{"success reward (§2.3)", p.SuccessReward, 10.0, false},
		{"step penalty (§2.3)", p.StepPenalty, -0.1, false},
		{"box reward (§2.3)", p.BoxReward, 1.0, false},
		{"style (§5.3)", p.Style, "grounding_worldmodeling", false},
		{"F1 threshold (D.1.2)", p.Repetition.Threshold, 0.7, false},
		{"repetition penalty (D.1.2)", p.Repetition.Penalty, 0.1, false},
		{"heap size", p.Repetition.TopK, 10, true},
		{"actor lr (Table 22)", p.ActorLR, 1e-6, false},
		{"critic lr (Table 22)", p.CriticLR, 1e-5, false},
		{"train batch (Table 22)", p.TrainBatch, 128, false},
		{"mini-batch (Table 22)", p.MiniBatch, 32, false},
		{"temperature (Table 22)", p.Temperature, 0.7, false},
		{"top-p (Table 22)", p.TopP, 0.95, false},
	})
	assert.NoError(t, p.GAE.Validate())
	assert.Equal(t, rewards.VAGENTurnConfig(), p.Turn, "Turn differs from rewards.VAGENTurnConfig")
}

// TestAVATARObjectiveIsThePapers runs the preset's objective: Eq. 11 is
// divided by σ_off itself however small it is (no floor), and the replayed
// part carries Eq. 2's KL term (Eq. 3) and needs reference log-probs.
func TestAVATARObjectiveIsThePapers(t *testing.T) {
	cfg := presets.AVATAR().Objective
	adv := make([]float64, 2)
	st, err := replay.Advantages(adv, []float64{0.5, 0.501}, []float64{0.5, 0.5}, cfg.Off)
	require.NoError(t, err)
	assert.False(t, st.Floored)
	assert.InDelta(t, 0.001/(0.001/math.Sqrt2+1e-6), adv[1], 1e-6, "Eq. 11 with σ_off = 0.001/√2")

	o, err := replay.NewObjective[float64](cfg)
	require.NoError(t, err)
	batch := func(b int, v ...float64) tensor.Batch[float64] {
		return tensor.Batch[float64]{Shape: tensor.Shape{B: b, T: len(v) / b}, Data: v}
	}
	on := replay.OnPolicy[float64]{
		Logp: batch(2, -1, -1, -1, -1), OldLogp: batch(2, -1, -1, -1, -1), Mask: batch(2, 1, 1, 1, 1),
		RefLogp: batch(2, -2, -2, -2, -2), Rewards: []float64{0, 1}, Groups: grpo.Contiguous(2),
	}
	off := replay.OffPolicy[float64]{
		Logp: batch(1, -1, -1), Mask: batch(1, 1, 1), RefLogp: batch(1, -2, -2),
		Samples: []replay.Sampled{{Experience: replay.Experience{Reward: 1, Logp: []float32{-1, -1}}, Baseline: 0.5}},
	}
	res, err := o.Step(batch(2, 0, 0, 0, 0), batch(1, 0, 0), on, off)
	require.NoError(t, err)
	assert.NotZero(t, res.Off.KLLoss, "no KL term on J_off")
	off.RefLogp = tensor.Batch[float64]{}
	_, err = o.Step(batch(2, 0, 0, 0, 0), batch(1, 0, 0), on, off)
	assert.ErrorIs(t, err, tensor.ErrEmpty, "J_off without reference log-probs")
}

// TestFormatParamsArePapers: each preset's format verifier, built with the
// preset's FormatParams, follows the paper's rule as written — a section
// that holds only invisible characters still counts — where rlpost's
// default (visible content) does not.
func TestFormatParamsArePapers(t *testing.T) {
	const zw = "\u200b"
	for _, c := range []struct {
		name, verifier string
		params         verifiers.Params
		pred           string
	}{
		{"V-Triune (Eq. 2)", presets.VTriune().FormatVerifier, presets.VTriune().FormatParams,
			"<think>" + zw + "</think><answer>B</answer>"},
		{"LLaVA-OV-1.5", presets.LLaVAOneVision15().FormatVerifier, presets.LLaVAOneVision15().FormatParams,
			"<think>" + zw + "</think> so \\boxed{4}"},
		{"VAGEN (Table 5)", "vagen_format", presets.VAGEN().FormatParams,
			"<think><observation>" + zw + "</observation><reasoning>push</reasoning><prediction>moves</prediction></think><answer>Left</answer>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			paper, err := verifiers.New(c.verifier, c.params)
			require.NoError(t, err)
			strict, err := verifiers.New(c.verifier, nil)
			require.NoError(t, err)
			p, err := paper.Verify(context.Background(), c.pred, "")
			require.NoError(t, err)
			s, err := strict.Verify(context.Background(), c.pred, "")
			require.NoError(t, err)
			assert.Equal(t, 1.0, p.Score, "the paper's rule counts the invisible section")
			assert.Less(t, s.Score, 1.0, "rlpost's default refuses it")
		})
	}
}
