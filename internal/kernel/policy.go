package kernel

// PolicyTokens is the argument block of the token-level policy-loss kernel
// for float32 storage (ppo.PolicyLoss with a per-token ratio). The caller
// fills the inputs and parameters and zeroes the outputs except BehaveMax,
// which starts at 1 in every lane. The assembly reads fields by offset:
// TestPolicyTokensLayout pins them.
//
// For each of the first N&^3 tokens with Mask == 1 the kernel computes, as
// package ppo defines them, the ratio r = e^{clamp(logp − base)} (base = Prox
// if given, else Old), the clipped surrogate, the behaviour weight
// e^{prox − old} capped, the token weight, the KL estimate to Ref, and
// Grad = Coef·dLoss/dlogp; it writes 0 to Grad where Mask == 0. Sums go to
// four-lane accumulators that the caller adds up in a fixed order. Lanes
// whose inputs are not finite, whose weight is negative or whose gradient
// overflows float32 set bits in Bad; the caller then recomputes the row in
// Go to report the position.
type PolicyTokens struct {
	Logp, Old, Adv, Mask, Prox, Ref, TW, Grad *float32
	N                                         int64
	HasProx, HasRef, HasTW                    int64
	// KL is 0 for no KL term, 1, 2, 3 for the estimators k1, k2, k3.
	KL int64
	_  [3]int64

	Lo, Hi, Dual    [4]float64 // 1 − ε_low, 1 + ε_high, dual clip (+Inf: off)
	Clamp, NegClamp [4]float64 // ±log-ratio clamp (±Inf: off)
	Beta, Coef      [4]float64 // KL coefficient; aggregation weight of the row
	KLClamp         [4]float64 // bound on k3 (+Inf: off)
	CapAt, CapTo    [4]float64 // behaviour weights above CapAt become CapTo

	Policy, KLSum, NegDelta, Ratio [4]float64 // Σ loss·w, Σ kl, Σ −(logp − base), Σ r
	Behave, BehaveMax              [4]float64 // Σ and max of behaviour weights
	High, Low, DualN, Capped       [4]float64 // counts of clip bounds and capped weights
	Bad                            int64
}

// Broadcast returns v in all four lanes.
func Broadcast(v float64) [4]float64 { return [4]float64{v, v, v, v} }

// Sum adds the four lanes in a fixed order, so results do not depend on
// anything but the inputs.
func Sum(v [4]float64) float64 { return (v[0] + v[1]) + (v[2] + v[3]) }
