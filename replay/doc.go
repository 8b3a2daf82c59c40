// Package replay implements the off-policy training of "AVATAR:
// Reinforcement Learning to See, Hear, and Reason Over Video" (arXiv
// 2508.03100, §4.1, §4.4, Algorithm 1; docs/spec.md#avatar-replay): the per-prompt
// reference score VCRS, the stratified replay buffer, off-policy advantages,
// the hybrid on/off-policy objective, and the hint trigger.
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
// 25 % to Easy. The position is p = b/n, b the number of prompts strictly
// below, so ties — every prompt at R̄ = 0 early in training, say — resolve
// to the bottom of the tied block: the block lands whole in the hardest tier
// it reaches, and a prompt at or below the Hard quantile always goes to Hard
// (VCRS.Position). The tier is computed from the prompt's R̄ after the
// rewards being added are counted, against the distribution at that moment;
// an experience keeps its tier once stored. Adding an experience also adds
// its reward to R̄(q) (Algorithm 1, line 10), so a prompt the policy learns
// rises, and its new experiences are promoted to easier tiers while its old
// ones stay where they were put. A full tier evicts its oldest experience.
//
// Sample draws K_off experiences (AVATAR uses 4 per group of 8): a tier with
// probability proportional to its weight, then an experience of it
// uniformly, with or without replacement, reproducibly for a seeded
// math/rand/v2 generator. With SampleOptions.ForPrompt it draws the given
// prompt's own experiences first — the past responses to the prompt whose
// fresh group the trainer completes, which is how replay restores a signal
// to a group whose on-policy advantages vanished — and falls back to the
// tier draw over other prompts for the rest, unless NoFallback. A Curriculum
// moves the weights over training, from easy-heavy to hard-heavy by default.
// With MaxStaleness = η > 0 (AReaL uses 4) experiences more than η policy
// versions old are dropped.
//
// # Off-policy advantage (Eq. 11)
//
//	A_off,i = (R(o_i) − R̄(q_i)) / (σ_off + ε)
//
// with σ_off the unbiased standard deviation of the rewards of the
// off-policy batch and ε = 1e-6 (the paper writes none). As written, Eq. 11
// grows without bound as σ_off → 0. AdvantageConfig.StdFloor = σ_min > 0 is
// this package's guard, off by default: the denominator becomes
// max(σ_off, σ_min) + ε, so |A_off| ≤ |R − R̄|/σ_min (DefaultStdFloor = 0.1
// suits rewards in [0, 1]; for 0/1 rewards it changes Eq. 11 only when
// every replayed reward is equal).
//
// # Hybrid objective (Eq. 3–4)
//
//	J_AVATAR(θ) = J_on(θ) + α·J_off(θ)                       (Eq. 3)
//	r_i^off(θ) = π_θ(o_i|q) / π_θoff(o_i|q)                   (Eq. 4)
//
// J_on is GRPO's clipped surrogate (Eq. 2) with the group advantages of Eq.
// 1; J_off has the same form with the ratio of Eq. 4, per token, over the
// behaviour log-probabilities stored with each experience, and the
// advantages of Eq. 11. Both advantages are shaped by TAS (Eq. 5–6, package
// tas) before the loss (Algorithm 1, line 7). Objective.Step computes L =
// L_on + α·L_off (L = −J, each term aggregated over its own tokens by
// ppo.PolicyLoss) and writes the gradient of both parts into the caller's
// slices. The defaults are §5's: α = 0.6, β = 0.1 (the KL weight of Eq. 2,
// taken on both parts, as Eq. 3 gives J_off Eq. 2's form; the guard
// FreshOnlyKL takes it on the fresh part only), λ_TAS = 0.3. Either part
// may carry per-token weights (APPO's, multiplied with TAS) and proximal
// log-probabilities (decoupled PPO), passed to ppo.PolicyLoss.
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
// versioned, CRC-32C-checked binary format that round-trips exactly.
// Snapshot copies the state under the lock in a few bulk copies and encodes
// it after releasing it; Restore decodes as it reads, never holding the
// whole snapshot. SaveFile writes atomically, so a crash leaves the previous
// file intact, and the temporary files a killed save leaves are removed by
// the next SaveFile or LoadFile of the same path.
package replay
