// Package apitest is the project's one failure-mode walker. Its helpers
// list what must have a failure case, so that a test fails when something
// new arrives without one:
//
//   - ErrorFuncs lists a package's exported functions and methods that
//     return an error; the failure-mode tests of the math packages (here),
//     rewards, verifiers and mathverify require a case for each.
//   - JSONFields lists every field path of a request type of `rlpost
//     conform`; the JSON walker (json_test.go) sends each one null, NaN, a
//     value of the wrong type and a value out of its range, and requires
//     an error that names the path. Out-of-range values come from a table
//     keyed by "op path", which a new field must join.
//
// Its tests check the error discipline of docs/design.md#conventions:
// every error wraps, with %w, a kind that errors.Is finds; every input
// error is a *tensor.ArgError naming the argument; every function's
// message starts with its package's name; and every silent wrong answer
// of issue 28 is refused (silent_test.go).
package apitest
