// Package klctl schedules the coefficient β of a KL penalty to a reference
// policy: fixed, or adapted towards a target KL as in "Fine-Tuning Language
// Models from Human Preferences" (Ziegler et al., arXiv 1909.08593, §2.2),
// the controller verl (AdaptiveKLController) and TRL's PPO use
// (docs/spec.md#kl-coefficient-control):
//
//	e_t     = clip(KL_t/KL_target − 1, −0.2, 0.2)
//	β_{t+1} = β_t·(1 + e_t·n_t/H)
//
// with KL_t the KL measured on step t, n_t the responses of that step and
// H the horizon (the paper's K_β = 0.1 is n_t/H for a fixed batch). β
// grows while the policy drifts past the target and shrinks while it stays
// below; the clip bounds the change per step to ±20 %·n_t/H.
//
// The package has one job and two users: the KL-in-reward penalty
// (gae.ApplyKLPenalty, verl use_kl_in_reward) and a trainer's KL loss
// coefficient (ppo.Config.KLCoef), so it sits in neither. The trainer owns
// a Controller, reads Value before a step and calls Update after it.
package klctl
