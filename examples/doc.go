// Package examples is the home of rlpost's runnable programs: an end-to-end
// training run of a small pure-Go policy with GRPO, DAPO and AVATAR, and a
// multi-turn agent trained with PPO and Bi-Level GAE. Each lives in its own
// sub-directory as a main package; this package holds no code. The
// sub-package trainers holds three smaller trainers as runnable examples
// that go test checks: a GRPO step over gorgonia tensors, a multi-turn
// agent step with Bi-Level GAE and a critic, and an AVATAR off-policy loop
// fed by two rollout goroutines.
package examples
