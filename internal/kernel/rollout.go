package kernel

import "math"

// RolloutTokens is the argument block of the rollout-correction kernel for
// float32 storage: the token-level part of ppo's rollout correction
// (docs/spec.md#rollout-correction), which turns the trainer's and the
// inference engine's log-probs into an effective mask and token weights
// before the loss reads them. The caller fills the inputs and parameters
// (RolloutBounds); the kernel adds to the outputs, so a row may take two
// calls (the second on a padded copy of its last N mod 8 tokens). The
// assembly reads fields by offset: TestRolloutTokensLayout pins them.
//
// For each of the first N&^7 tokens, with ℓ = Old − Roll and ℓc = ℓ clamped
// to ±20 (verl's SAFETY_BOUND), e = e^ℓc, the kernel
//
//   - adds, over tokens with Mask == 1 (valid), ℓ to LogRatio, Old to
//     OldSum (the rollout's sum is their difference), e − ℓc − 1 to K3,
//     and with RolloutIS e to Weights; it counts them in Valid, and the
//     tokens with Mask ≠ 0 in NonZero (a mask is good when the two agree);
//   - with RolloutIS, writes EW = TW·min(e, ISMax) on valid tokens and
//     counts in Truncated those with e above it; without, EW = TW (TW = 1
//     without RolloutTW; no EW at all without RolloutEW);
//   - with RolloutRS, writes EMask = 0 for valid tokens with e outside
//     [Lower, Upper] and counts them in Rejected; EMask = Mask elsewhere
//     (no EMask at all without RolloutEM).
//
// It works in eight float32 lanes, as the storage does: ℓ is rounded to
// float32 (exact when Old and Roll are within a factor 2 of each other),
// e comes from the policy kernel's float32 exponential (relative error
// 7.3e-8), and e − ℓc − 1 is formed from the pieces of that exponential
// without cancellation (2^n − 1 − ℓc + 2^n·f + 2^n·f²·q(f) for ℓc = n·ln2 +
// f), so it keeps float32's relative precision for small ℓ. Each lane sums
// 16 tokens in float32, then widens the partial sums into four-lane
// float64 accumulators in a fixed order (Sum), so results depend on the
// inputs alone. A non-finite input on a valid token makes LogRatio
// non-finite (as does a float32 overflow from finite inputs); the caller
// then redoes the row in float64 Go, which names the position or gives
// the result float32 could not.
type RolloutTokens struct {
	Old, Roll, Mask, TW *float32
	EMask, EW           *float32
	N                   int64
	Flags               int64 // RolloutTW | RolloutIS | …

	// ISCut and ISMax are the truncation threshold rounded down and to
	// nearest; Lower and Upper the rejection bounds rounded inwards
	// (RolloutBounds): then the float32 comparisons decide as float64
	// ones against the exact thresholds would.
	ISCut, ISMax, Lower, Upper [8]float32

	LogRatio, OldSum, K3, Weights [4]float64
	// Counts, negated in each lane (Count adds them up).
	Valid, NonZero, Truncated, Rejected [8]int32
}

// Flags of RolloutTokens.
const (
	RolloutTW = 1 << iota // TW holds token weights (else 1)
	RolloutIS             // token-level importance weights
	RolloutRS             // token-level rejection
	RolloutEW             // write EW
	RolloutEM             // write EMask (RolloutRS needs it)
)

// RolloutBounds sets the thresholds of k: token weights truncated at isMax,
// tokens rejected outside [lower, upper] (±Inf: none).
func (k *RolloutTokens) RolloutBounds(isMax, lower, upper float64) {
	k.ISCut, k.ISMax = Splat32(roundDown(isMax)), Splat(isMax)
	k.Lower, k.Upper = Splat32(-roundDown(-lower)), Splat32(roundDown(upper))
}

// Splat32 returns v in all eight lanes.
func Splat32(v float32) [8]float32 { return [8]float32{v, v, v, v, v, v, v, v} }

// roundDown returns the largest float32 ≤ x: for a float32 e, e > x exactly
// when e > roundDown(x), and e ≤ x exactly when e ≤ roundDown(x).
func roundDown(x float64) float32 {
	f := float32(x)
	if float64(f) > x {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}
