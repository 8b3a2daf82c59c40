// Package trainers holds three small trainers written against the public
// API alone, as runnable examples that go test checks (trainers_test.go):
//
//   - a GRPO step over log-probabilities held in gorgonia *gtensor.Dense
//     tensors, shared with rlpost without copying through tensor/dense;
//   - one multi-turn agent step with Bi-Level GAE (VAGEN, arXiv
//     2510.16907) and a critic trained with ppo.ValueLoss;
//   - an AVATAR off-policy loop (arXiv 2508.03113): two rollout goroutines
//     feed a replay.Buffer, and the trainer takes replay.Objective steps on
//     fresh groups plus replayed experiences.
//
// They start where a newcomer starts: go doc, the README and these files.
// The package has no code of its own.
package trainers
