// Package appo computes the token weights of APPO, Attention-guided
// Perception Policy Optimization (arXiv 2602.23823, §3.2, Eq. 3–14), as
// docs/spec.md#appo interprets it; the paper has no official code.
//
// APPO reweights, within a group of G responses to one video question, the
// tokens that look at the frames the high-reward responses look at. The
// weights multiply each token's term of a DAPO-style loss (Eq. 13); the
// rest of the loss is package ppo's.
//
// # Frame selection
//
// The responses are split by reward, the accuracy reward in the paper (Eq. 3):
//
//	S1 = {o_i : r_i ≥ τ},  S2 = {o_i : r_i < τ}.
//
// The attention of response token j to frame f_t is the mean of the
// attention weights a_jv^(h) over the heads h and the frame's visual
// tokens v (Eq. 4, FrameAttention), H heads and |f_t| tokens:
//
//	Attn(j, f_t) = 1/(H·|f_t|) · Σ_h Σ_{v ∈ f_t} a_jv^(h),
//
// and also over the chosen layers, the last three in the paper's ablation.
//
// A response's focus on a frame is the mean of its K1 highest token
// attentions to it, and it focuses on its K2 frames of highest focus
// (Eq. 5–7):
//
//	φ(i) = TopK_j(Attn(o_{i,j}, f_t), K1),  Attn(o_i, f_t) = 1/K1 · Σ_{j ∈ φ(i)} Attn(o_{i,j}, f_t),
//	ψ(i) = TopK_t(Attn(o_i, f_t), K2).
//
// The paper states two values of K2: Algorithm 1's example "K1, K2, K3 …
// (e.g., 15, 5, 64)", which DefaultConfig follows, and the ablation's best,
// K2 = 3 (§4.5, "there is an optimal value for K2, which is K2 = 3").
//
// The frames of each set are pooled (Eq. 8), ψS1 = ∪_{i ∈ S1} ψ(i) and
// ψS2 = ∪_{i ∈ S2} ψ(i), and the target frames ψ′ are ψS1 (Soft, the
// default), ψS1 ∖ ψS2 (Hard) or ψS1 ∪ ψS2 (All).
//
// # Perception-token weights
//
// Each target frame f_k has a group of perception tokens (Eq. 9–10): the
// K3 tokens of every response with the highest attention to f_k. The token
// of rank s in its response's list sits in slot s. Its discrepancy is the
// KL divergence of its next-token distribution p from the mean p̄_s of the
// distributions in slot s over the responses that have a slot s (Eq. 11
// and 14), min-max normalised within the group:
//
//	d = KL(p ‖ p̄_s) = Σ_v p_v·log(p_v / p̄_s,v),  D = (d − d_min)/(d_max − d_min),
//
// with D = 0 for the whole group when all its d are equal. A token's
// weight averages D over the K groups it is in (Eq. 12); a token in no
// group keeps weight 1:
//
//	W = 1 + α · (1/K) · Σ_k D^(k).
//
// So W ∈ [1, 1 + α]. The objective is then (Eq. 13, clipping omitted)
//
//	L = 1/Σ|o_i| · Σ_i Σ_t r_{i,t}(θ)·W_{i,t}·A_i,
//
// DAPO's token-mean with no KL term: pass the weights as
// ppo.Inputs.TokenWeights (Scatter lays them out as a [G, T] batch) with
// grpo.DAPOLoss().
//
// # Decisions where the paper is vague (docs/spec.md#appo)
//
//   - Every top-K ranks by value and breaks ties by the lower index, token
//     or frame; a K larger than what exists takes all. A response shorter
//     than K1 averages all its tokens in Eq. 6: only the ranking of frames
//     within a response uses the focus, and the divisor is the same for all
//     of them.
//   - A response without tokens takes part in no step: it is in neither S1
//     nor S2 and in no group. A slot held by one response only gives its
//     token d = 0, the KL of a distribution from itself.
//   - Distributions are used as given: natural log, 0·log 0 = 0, no
//     renormalisation. Each one read must be finite, ≥ 0 and sum to 1
//     within Config.SumTol (1e-3).
//   - Discrepancies count as all equal when their spread is below 1e-12
//     of their size: identical distributions can give KLs that differ in
//     the last bits, and normalising that noise would give random weights.
//
// # Cost
//
// The paper's group, 8 responses of 512 tokens over 30 frames with a
// 32 000-word vocabulary, holds half a gigabyte of distributions in float32.
// The algorithm never holds them: it asks a Distributions source for one
// at a time and reads only those of tokens in some group, each fetched
// once and kept until the call returns (a source that fills the caller's
// scratch row costs V floats per grouped token of memory, which the
// Weighter keeps for its next call). It splits the KL as
// Σ p log p − Σ p log p̄, so the logarithms number V per grouped token
// plus V per slot instead of V per group member. A source that also
// implements Entropies (a trainer that logs token entropies has them)
// saves the logarithms of the first term, most of them.
//
// The rows are also most of the memory traffic: at the paper's size with
// Qwen2.5-VL's 152 064-word vocabulary, the benchmark's group (uniform
// attention) has 3 555 grouped tokens, 2.2 GB of float32 rows, in 960
// slots of 8 members, and a pass over the rows and then one per slot
// would read 7 GB. Instead the vocabulary is cut into
// blocks of 512 words and, block by block, every grouped row's
// Σ p log p and sum and every slot's mean, log and dot products are
// taken while the block's rows are in the cache, so each row is read
// from memory once as far as the cache keeps a block's rows (7 MB per
// core at this size). The blocks form at most 32 parts, spread over the
// cores, whose partial sums are added in part order: the weights are the
// same to the bit at any GOMAXPROCS.
//
// On amd64 processors with AVX-512F the row and slot kernels of float32
// distributions run in eight float64 lanes, with a logarithm that finds
// its 16 table entries by register permutes instead of gathers
// (log_amd64.go derives it), within 1e-16 + 2.3e-16·|log x| of float64's
// log like the scalar one (TestLogAccuracy); the weights agree with the
// scalar loops' to float32 rounding (the build tag purego turns the
// lanes off). A Weighter keeps its scratch space between calls and
// allocates nothing once warm. BENCHMARKS.md has the measured times.
//
// # A worked example
//
// Four responses of three tokens each watch a six-frame video (the
// package Example runs it). Rewards are 1, 1, 0, 0; with τ = 0.5,
// S1 = {0, 1} and S2 = {2, 3}. The configuration is K1 = 2, K2 = 2, K3 = 1,
// α = 1.7, Soft. Attention, one row per token, one column per frame:
//
//	response 0 (r = 1)               response 1 (r = 1)
//	  t0  0   .6  .5  0   0   0        t0  0   0   .7  0   .2  0
//	  t1  0   .2  .3  0   .1  0        t1  0   .1  .1  0   .6  0
//	  t2  .1  0   0   0   .1  0        t2  0   0   0   .1  .1  .1
//	response 2 (r = 0)               response 3 (r = 0)
//	  t0  0   0   .4  0   0   .5       t0  .8  0   0   0   0   .2
//	  t1  .1  0   .2  0   0   .3       t1  .2  0   .1  0   0   .4
//	  t2  0   .1  0   0   0   0        t2  0   0   0   .2  0   0
//
// The focus is the mean of the two highest entries of each column.
// Response 0: frames 1 and 2 (.4 each; the rest at most .1). Response 1:
// frames 2 and 4 (.4 each). Response 2: 5 (.4) and 2 (.3). Response 3:
// 0 (.5) and 5 (.3). So ψS1 = {1, 2, 4}, ψS2 = {0, 2, 5}, and Soft targets
// ψ′ = {1, 2, 4} (Hard would give {1, 4}, All {0, 1, 2, 4, 5}).
//
// With K3 = 1 each group holds the top token of each response for its
// frame, ties to the lower token (response 3 has only zeros in column 1,
// so its t0; response 0 has .1 twice in column 4, so its t1):
//
//	frame 1: 0.t0  1.t1  2.t2  3.t0
//	frame 2: 0.t0  1.t0  2.t0  3.t1
//	frame 4: 0.t1  1.t1  2.t0  3.t0
//
// The distributions are over two words: "sure" (1, 0) for tokens 0.t0,
// 1.t0 and 1.t1; "other" (0, 1) for 2.t0 and 3.t1; "half" (½, ½) for the
// rest. In frame 1's group, two sure and two half tokens average to
// (¾, ¼); a sure token is log 4/3 from it and a half token ½·log 4/3, so
// the sure tokens normalise to 1 and the half ones to 0. In frame 2's
// group, two sure and two other tokens average to (½, ½) and all four are
// log 2 from it: all equal, all 0. In frame 4's group, half, sure, other,
// half average to (½, ½): the half tokens are at 0 and the others at
// log 2, normalised 0, 1, 1, 0. Averaging over the groups of each token
// and applying W = 1 + 1.7·mean:
//
//	0.t0: frames 1, 2 → (1 + 0)/2 → 1.85     1.t1: frames 1, 4 → (1 + 1)/2 → 2.7
//	2.t0: frames 2, 4 → (0 + 1)/2 → 1.85     every other token → 1
//
// Eight tokens are in some group; 0.t2, 1.t2, 2.t1 and 3.t2 are in none.
package appo
