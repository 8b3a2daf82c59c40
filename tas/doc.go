// Package tas computes Temporal Advantage Shaping weights ("AVATAR:
// Reinforcement Learning to See, Hear, and Reason Over Video", arXiv
// 2508.03100, §4.2, Eq. 5–6; docs/spec.md#tas): a per-token weight that
// depends on where the token sits in its response, applied to the
// response's advantage.
//
// For a response with L valid tokens at valid positions t = 0..L−1,
//
//	t̃   = t/(L − 1)                       (Eq. 5)
//	w_t = 1 + λ·(2t̃ − 1)²                 (Eq. 6)
//	A_t = w_t·A                            (the shaped advantage of §4.2)
//
// so the first and last tokens (planning and synthesis) get 1 + λ and the
// middle of the response 1. AVATAR uses λ = 0.3 (§5, "Implementation
// Details"; also the peak of its λ sweep, Appendix B RQ5, Fig. 9). Positions are counted over the valid tokens of each row, so the
// weights are right for ragged batches and for masks that are not a prefix
// (a prompt, or observations between the turns of an agent). A response of
// one token gets w = 1; mask-0 positions get 0.
//
// The ablation's alternatives (AVATAR Table 5, §5.2 RQ3) are
//
//	Uniform        w = 1                         plain GRPO credit assignment
//	Inverse        w = 1 + λ·(1 − (2t̃ − 1)²)    middle-focused
//	LinearDecay    w = 1 + λ·(1 − t̃)            planning-focused
//	LinearIncline  w = 1 + λ·t̃                  synthesis-focused
//
// The paper names the two linear schemes without formulas; these span the
// same range [1, 1 + λ] as TAS, so that at equal λ the shapes differ only
// in where the weight goes. The CUDA kernels implement Parabolic, Uniform
// and Inverse.
//
// Weights writes the weights; ApplySequence turns one advantage per
// response (GRPO's A_i) into shaped per-token advantages, and ApplyTokens
// shapes per-token advantages in place. The shaped advantages go to
// ppo.Inputs.Advantages; alternatively the weights go to
// ppo.Inputs.TokenWeights, which scales the policy term alike. All accept
// float32 or float64 storage, compute in float64, allocate nothing and split
// large batches across the CPUs by rows.
package tas
