// Package apitest holds the test that walks the exported functions of the
// math packages (tensor, tensor/dense, ppo, gae, tas, grpo, replay, appo)
// through their documented failure modes and checks the error discipline
// of docs/design.md#conventions: every error wraps, with %w, a kind that
// errors.Is finds; every input error is a *tensor.ArgError naming the
// argument; every function's message starts with its package's name.
package apitest
