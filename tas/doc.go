// Package tas computes Temporal Advantage Shaping weights (AVATAR, arXiv 2508.03100,
// §4.2, Eq. 5–6; docs/spec.md#tas): a per-token weight that depends on where the
// token sits in its response, applied to the response's advantage.
//
// For a response with L valid tokens at valid positions t = 0..L−1,
//
//	t̃   = t/(L − 1)                       (Eq. 5)
//	w_t = 1 + λ·(2t̃ − 1)²                 (Eq. 6)
//	A_t = w_t·A                            (the shaped advantage of §4.2)
//
// so the first and last tokens (planning and synthesis) get 1 + λ and the
// middle of the response 1. AVATAR uses λ = 0.3, the best value of its
// ablation. Positions are counted over the valid tokens of each row, so the
// weights are right for ragged batches and for masks that are not a prefix
// (a prompt, or observations between the turns of an agent). A response of
// one token gets w = 1; mask-0 positions get 0.
//
// The ablation's alternatives (AVATAR Table 5) are Uniform, w = 1 (plain
// GRPO credit assignment), and Inverse, w = 1 + λ·(1 − (2t̃ − 1)²), which
// favours the middle instead.
//
// Weights writes the weights; ApplySequence turns one advantage per
// response (GRPO's A_i) into shaped per-token advantages, and ApplyTokens
// shapes per-token advantages in place. The shaped advantages go to
// ppo.Inputs.Advantages; alternatively the weights go to
// ppo.Inputs.TokenWeights, which scales the policy term alike. All accept
// float32 or float64 storage, compute in float64, allocate nothing and split
// large batches across the CPUs by rows.
package tas
