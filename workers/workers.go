// Package workers bounds the goroutines rlpost's compute functions use.
//
// Every row-parallel function (ppo.PolicyLoss and ValueLoss, gae.Advantages,
// BiLevel and TurnLevel, tas.Weights, grpo.Advantages and AdvantagesWith,
// appo.Weights) splits a large batch among its caller and a shared pool of
// GOMAXPROCS − 1 worker goroutines. A trainer that already runs several
// calls at once (one per micro-batch, one per GPU) would have each of them
// ask the pool for every worker; SetMax bounds how many goroutines one
// call uses, its caller included, so the trainer's own parallelism and
// rlpost's add up to what it chose. Results are the same bits at any
// bound: every function combines its rows in a fixed order.
package workers

import "github.com/rlpost/rlpost/internal/parallel"

// SetMax bounds every later compute call to n goroutines, its caller
// included: 1 runs each call on its caller alone. n ≤ 0 restores the
// default, GOMAXPROCS. The bound is process-wide and safe to change while
// calls run (a running call keeps the bound it started with). It returns
// the previous bound (0 for the default).
func SetMax(n int) (previous int) { return parallel.SetMax(n) }

// Max returns the number of goroutines one compute call uses now, its
// caller included: the bound of SetMax, or GOMAXPROCS, whichever is less.
func Max() int { return parallel.Workers() }
