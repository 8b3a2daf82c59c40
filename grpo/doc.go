// Package grpo computes advantages from outcome rewards and configures the
// group-relative policy losses built on package ppo (docs/spec.md#group-advantages).
//
// For a group of G responses to one prompt with rewards R_1..R_G:
//
//	GRPO (AVATAR Eq. 1; DeepSeekMath):  A_i = (R_i − mean(R)) / (std(R) + ε)
//	Dr. GRPO (scale "none"):            A_i =  R_i − mean(R)
//	batch scaling:                      A_i = (R_i − mean(R)) / (std over the batch + ε)
//	RLOO:                               A_i =  R_i − mean_{j≠i} R_j
//
// std is unbiased (n − 1) by default, population optionally, ε = 1e-6. A
// group of one response gets A = 0, and a group whose rewards are all equal
// gets A = 0 for every response: the "vanishing advantage" that AVATAR's
// replay and DAPO's dynamic sampling fight. Advantages reports how often it
// happened. Groups are contiguous runs of a fixed size or are given by group
// ids in any order.
//
// Reward shaping around the advantage:
//
//	AReaL (LLaVA-OV-1.5): r' = clip((r + bias)·scale, −c, c), bias −0.5, scale 10, c 20
//	DAPO overlong:       r' = r + min(−(|y| − (L_max − L_cache))/L_cache · f, 0), and r − f past L_max
//	DAPO dynamic sampling: keep a group iff its rewards are not all equal (or it has one member)
//
// The loss presets are ppo.Config values with each paper's defaults: GRPO
// (ε 0.2, β 0.04, k3 KL, per-sequence mean), Dr. GRPO (sum over tokens
// normalised by a constant length), DAPO (clip-higher 0.2/0.28, token-mean,
// no KL) and AReaL's decoupled PPO (0.2/0.28, behaviour weight capped at 5).
package grpo
