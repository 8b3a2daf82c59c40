// Package replay implements AVATAR's off-policy training (AVATAR, arXiv 2508.03100, §4.1,
// §4.4, Algorithm 1; docs/spec.md#avatar-replay): the per-prompt reference score VCRS, the
// stratified replay buffer, off-policy advantages, the hybrid on/off-policy
// objective, and the hint trigger.
//
// # VCRS (§4.4)
//
// R̄(q) is the mean reward of the last W = 20 on-policy responses to prompt
// q. VCRS keeps it in O(1) per reward (a ring and a running sum, re-added
// whenever the ring wraps) plus O(log n) comparisons and a short copy to
// keep the distribution of R̄ over the n tracked prompts in a sorted,
// blocked multiset that answers ranks and quantiles in O(log n). At most
// MaxPrompts prompts are tracked; the least recently updated is forgotten
// first.
//
// # Stratified buffer (§4.1)
//
// The buffer holds Capacity = 10 000 experiences in three FIFO tiers of
// fixed size: Easy 25 %, Medium 35 %, Hard 40 %. An experience's tier is
// decided when it is added, from its prompt's place in the distribution of
// R̄ over the prompts the VCRS tracks (each prompt counted once, with its
// current R̄): the bottom 40 % go to Hard, the next 35 % to Medium, the top
// 25 % to Easy. Ties — every prompt at R̄ = 0 early in training, say — are
// spread over the tied block's share of the distribution by a fixed hash
// of the prompt id (VCRS.Position). Adding an experience also adds its
// reward to R̄(q) (Algorithm 1, line 10), so a prompt the policy learns
// rises, and its new experiences are promoted to easier tiers while its old
// ones stay where they were put. A full tier evicts its oldest experience.
//
// Sample draws K_off experiences (AVATAR uses 4 per group of 8): a tier
// with probability proportional to its weight, then an experience of it
// uniformly, with or without replacement, reproducibly for a seeded
// math/rand/v2 generator. A Curriculum moves the weights over training,
// from easy-heavy to hard-heavy by default. With MaxStaleness = η > 0
// (AReaL uses 4) experiences more than η policy versions old are dropped.
//
// # Off-policy advantage (Eq. 11)
//
//	A_off,i = (R(o_i) − R̄(q_i)) / (σ_off + ε)
//
// with σ_off the unbiased standard deviation of the rewards of the
// off-policy batch and ε = 1e-6. When σ_off = 0 the advantages are
// R − R̄(q), unscaled (see Advantages).
//
// # Hybrid objective (Eq. 3–4)
//
//	J_AVATAR(θ) = J_on(θ) + α·J_off(θ)                       (Eq. 3)
//	r_i^off(θ) = π_θ(o_i|q) / π_θoff(o_i|q)                   (Eq. 4)
//
// J_on is GRPO's clipped surrogate (Eq. 2) with the group advantages of
// Eq. 1; J_off has the same form with the ratio of Eq. 4, per token, over
// the behaviour log-probabilities stored with each experience, and the
// advantages of Eq. 11. Both advantages are shaped by TAS (Eq. 5–6,
// package tas) before the loss (Algorithm 1, line 7). Objective.Step
// computes L = L_on + α·L_off (L = −J, each term aggregated over its own
// tokens by ppo.PolicyLoss) and writes the gradient of both parts into the
// caller's slices.
//
// # Hinting (§4.1)
//
// A prompt that stays hard (R̄(q) below a threshold over a full window)
// while the policy stops exploring (its KL to the behaviour policy below a
// threshold) gets a hint from a caller-supplied HintProvider, at most a
// fixed number of times.
//
// # Concurrency and snapshots
//
// A Buffer is safe for concurrent use by rollout workers (Add) and trainers
// (Sample) behind one mutex. Snapshot and Restore move it through a
// versioned, CRC-32C-checked binary format that round-trips exactly;
// SaveFile writes one atomically, so a crash leaves the previous file
// intact.
package replay
