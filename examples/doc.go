// Package examples is the home of rlpost's runnable programs: an end-to-end
// training run of a small pure-Go policy with GRPO, DAPO and AVATAR, and a
// multi-turn agent trained with PPO and Bi-Level GAE. Each lives in its own
// sub-directory as a main package; this package holds no code.
package examples
