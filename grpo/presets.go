package grpo

import "github.com/rlpost/rlpost/ppo"

// GRPOLoss returns the GRPO paper's loss (DeepSeekMath; AVATAR Eq. 2): clip
// ε = 0.2, KL coefficient β = 0.04 with the k3 estimator, each sequence's
// token mean averaged over sequences (verl loss_agg_mode
// "seq-mean-token-mean"; TRL loss_type "grpo").
func GRPOLoss() ppo.Config {
	c := ppo.DefaultConfig()
	c.KLCoef, c.KLEstimator = 0.04, ppo.K3
	c.Mode = ppo.SeqMeanTokenMean
	return c
}

// DrGRPOLoss returns Dr. GRPO's loss: no KL, token sums normalised by a
// constant maxLen for every sequence (verl "seq-mean-token-sum-norm"; TRL
// "dr_grpo"). Pair it with Config{Scale: ScaleNone} advantages.
func DrGRPOLoss(maxLen int) ppo.Config {
	c := ppo.DefaultConfig()
	c.Mode, c.Norm = ppo.SeqMeanTokenSumNorm, float64(maxLen)
	return c
}

// DAPOLoss returns DAPO's loss: clip-higher with ε_low = 0.2 and
// ε_high = 0.28, token-level mean over the batch, no KL term.
func DAPOLoss() ppo.Config {
	c := ppo.DefaultConfig()
	c.ClipLow, c.ClipHigh = 0.2, 0.28
	c.Mode = ppo.TokenMean
	return c
}

// DecoupledLoss returns AReaL's decoupled PPO as LLaVA-OneVision-1.5's RL
// write-up runs it ("Decoupled PPO", "Behavior Weight"): clip 0.2/0.28
// against the proximal policy, behaviour importance weight capped at 5 by
// truncation, token mean, no KL. Give ppo.Inputs a ProxLogp.
func DecoupledLoss() ppo.Config {
	c := DAPOLoss()
	c.BehaveCap, c.BehaveCapMode = 5, ppo.CapTruncate
	return c
}

// AReaLAdvantages returns the group advantage of LLaVA-OneVision-1.5's RL
// write-up on AReaL: Â_i = (r_i − μ_group)/(σ_group + ε) with ε = 1e-6 and
// the population standard deviation (divide by G). Its worked example,
// rewards 1, 1, 1, 0.5, 0, prints mean 0.70 and std 0.41; the population
// std of those rewards is 0.400 and the unbiased one 0.447, so the
// population convention is the one the example follows (its 0.41 is
// rounded up, and the printed advantages +0.73 and −1.71 divide by 0.41;
// with 0.400 they are +0.75 and −1.75).
func AReaLAdvantages() Config { return Config{Std: Population, Eps: 1e-6} }

// VerlDefaults returns the advantage configuration of verl's
// compute_grpo_outcome_advantage with its defaults (epsilon 1e-6,
// norm_adv_by_std_in_grpo = true: ScaleGroup; false is ScaleNone), the
// unbiased group std (torch.std), a size-1 group given its reward
// (SingletonReward), for GPG verl's α = B/#{R ≠ 0} (GPGNonzero), and the
// REINFORCE++ pair whitened with masked_whiten's means over count + 10⁻⁸
// (WhitenMeanEps). verl's estimators other than GRPO: VerlEstimator.
func VerlDefaults() Config {
	return Config{Eps: 1e-6, Singleton: SingletonReward, GPGAlpha: GPGNonzero, WhitenMeanEps: 1e-8}
}

// VerlEstimator returns c with the estimator e as verl's adv_estimator of
// that name computes it (verl/trainer/ppo/core_algos.py), where verl's
// function departs from c: verl's RLOO (compute_rloo_outcome_advantage) is
// never divided by a standard deviation, whatever norm_adv_by_std_in_grpo
// says, so RLOO gets ScaleNone. The others are verl's as c has them.
func VerlEstimator(c Config, e Estimator) Config {
	c.Estimator = e
	if e == RLOO {
		c.Scale = ScaleNone
	}
	return c
}

// TRLDefaults returns the advantage configuration of TRL's GRPOTrainer
// with its defaults: scale_rewards "group" (ScaleGroup; "batch" and
// "none"/False are ScaleBatch and ScaleNone), the unbiased group std
// (torch.std) and ε = 1e-4 in (R − mean)/(std + ε). TRL needs groups of
// two or more (num_generations ≥ 2); size-1 groups keep rlpost's 0.
func TRLDefaults() Config { return Config{Eps: 1e-4} }
