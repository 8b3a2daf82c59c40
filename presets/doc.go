// Package presets holds the settings of the five papers rlpost implements,
// one function per paper, so that reproducing a paper starts from one
// call:
//
//	AVATAR()           "AVATAR: Reinforcement Learning to See, Hear, and Reason Over Video", arXiv 2508.03100
//	APPO()             "APPO: Attention-guided Perception Policy Optimization", arXiv 2602.23823
//	LLaVAOneVision15() LLaVA-OneVision-1.5's RL write-up on AReaL
//	VTriune()          V-Triune, "One RL to See Them All"
//	VAGEN()            VAGEN, multi-turn RL for VLM agents with visual state reasoning
//
// Each returns a struct with every knob the paper sets, as the rlpost
// configuration types that take it (ppo.Config, grpo.Config, tas.Config,
// replay.Config, appo.Config, gae.BiLevelConfig, rewards.TurnConfig …) and
// as plain numbers for the knobs that belong to the trainer rather than to
// rlpost (learning rate, batch size, sampling temperature). Every field's
// comment names the paper's section, equation or table. Where the paper
// states no value, the comment says so ("the paper states none") and says
// what rlpost chose and why; the package tests check every stated value
// against the paper and every choice against its comment.
//
// The values are copies: change them freely before use.
package presets
