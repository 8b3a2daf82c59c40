package kernel

// PolicyTokens is the argument block of the token-level policy-loss kernel
// for float32 storage (ppo.PolicyLoss with a per-token ratio). The caller
// fills the inputs and parameters (Splat) and zeroes the outputs except
// BehaveMax, which starts at 1 in every lane. The assembly reads fields by
// offset: TestPolicyTokensLayout pins them.
//
// For each of the first N&^7 tokens with Mask == 1 the kernel computes, as
// package ppo defines them, the ratio r = e^{clamp(logp − base)} (base = Prox
// if given, else Old), the clipped surrogate, the behaviour weight
// e^{prox − old} capped, the token weight, the KL estimate to Ref, and
// Grad = Coef·dLoss/dlogp; it writes 0 to Grad where Mask == 0. It works in
// eight float32 lanes (AVX2) or sixteen (AVX-512; see RunLanes) with a
// float32 exponential (worst relative error measured 7.3e-8, bounded by
// 1.2e-7 in TestExp32Accuracy)
// and widens each per-token term to float64 before adding it to four-lane
// float64 accumulators, which the caller adds up in a fixed order (Sum,
// Count), so results depend on the inputs alone: the two widths add the
// same terms in the same order and give the same bits.
// Lanes whose inputs are not finite (or whose float32 sum overflows), whose
// weight is negative, whose exponential would overflow float32 (argument
// above 88) or whose gradient overflows set bits in Bad (one per lane of
// the kernel that ran, so only Bad != 0 means anything); the caller then
// recomputes the row in float64 Go, which either reports the position or
// gives the result float32 arithmetic could not.
type PolicyTokens struct {
	Logp, Old, Adv, Mask, Prox, Ref, TW, Grad *float32
	N                                         int64
	HasProx, HasRef, HasTW                    int64
	// KL is 0 for no KL term, 1, 2, 3 for the estimators k1, k2, k3.
	KL int64
	_  [3]int64

	Lo, Hi, Dual    [8]float32 // 1 − ε_low, 1 + ε_high, dual clip (+Inf: off)
	Clamp, NegClamp [8]float32 // ±log-ratio clamp (±Inf: off)
	Beta, Coef      [8]float32 // KL coefficient; aggregation weight of the row
	KLClamp         [8]float32 // bound on k3 (+Inf: off)
	CapAt, CapTo    [8]float32 // behaviour weights above CapAt become CapTo

	Policy, KLSum, NegDelta, Ratio [4]float64 // Σ loss·w, Σ kl, Σ −(logp − base), Σ r
	Behave                         [4]float64 // Σ behaviour weights
	BehaveMax                      [8]float32 // max of behaviour weights
	High, Low, DualN, Capped       [8]int32   // minus the counts of clip bounds and capped weights
	Bad                            int64
}

// Splat returns v rounded to float32 in all eight lanes.
func Splat(v float64) [8]float32 {
	f := float32(v)
	return [8]float32{f, f, f, f, f, f, f, f}
}

// Splat64 returns v in all four lanes.
func Splat64(v float64) [4]float64 { return [4]float64{v, v, v, v} }

// Sum adds the four lanes in a fixed order, so results do not depend on
// anything but the inputs.
func Sum(v [4]float64) float64 { return (v[0] + v[1]) + (v[2] + v[3]) }

// Count returns the count held, negated, in the eight lanes of a counter.
func Count(v [8]int32) int {
	n := 0
	for _, c := range v {
		n -= int(c)
	}
	return n
}

// Max returns the largest of the eight lanes.
func Max(v [8]float32) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return float64(m)
}
