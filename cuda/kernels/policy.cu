// The clipped-surrogate policy loss of docs/spec.md#policy-losses and its gradient dLoss/dlogp,
// the GPU twin of ppo.PolicyLoss for float32 storage. Every formula and
// every expression's order of operations follows ppo/policy.go, so the two
// agree to the last bit except where exp differs (CUDA's exp against the
// CPU's kernel.Exp, both well inside float32 rounding).
//
// A call runs these kernels in order on one stream:
//
//   policy_rows       one block per row: valid-token count, first bad mask
//                     entry; for GSPO also the row's Σ log-ratio and the
//                     check of every input of the row
//   policy_coef       one block: token and sequence counts, the aggregation
//                     weight coef[b] of each row (ppo's rowWeights)
//   policy_tokens     (token ratio) blocks of LOSS_CHUNK tokens: per-token
//                     loss, KL and gradient, block partial sums
//   policy_seq_tokens (GSPO) the same at the row's sequence ratio, with the
//                     KL part of the gradient and Σ dℓ/ds per block
//   policy_seq_grad   (GSPO) adds the sequence part of the gradient
//   policy_reduce     one block: rows in a fixed order into the status
//
// Sums are float64 throughout; partial sums of a block are reduced in a
// fixed tree and then combined row by row in a fixed order, so a call gives
// the same bits on every run.
#include "common.cuh"

// What is wrong with a token, in the order ppo checks: a negative token
// weight first, then the first non-finite input in argument order, then a
// gradient that overflows float32.
#define BAD_MASK 1
#define BAD_LOGP 2
#define BAD_OLD 3
#define BAD_ADV 4
#define BAD_PROX 5
#define BAD_REF 6
#define BAD_TW 7
#define BAD_WEIGHT 8
#define BAD_OVERFLOW 9

// Aggregation modes, numbered as ppo.Aggregation.
#define AGG_TOKEN_MEAN 0
#define AGG_SEQ_MEAN_TOKEN_MEAN 1
#define AGG_SEQ_MEAN_TOKEN_SUM 2
#define AGG_SEQ_MEAN_TOKEN_SUM_NORM 3
#define AGG_TOKEN_SUM 4

// Which bound of the surrogate is active, as in ppo.
#define CLIP_NONE 0
#define CLIP_HIGH 1
#define CLIP_LOW 2
#define CLIP_DUAL 3

// Slots of a block's partial sums.
#define P_POLICY 0     // Σ loss·w
#define P_KL 1         // Σ kl
#define P_NEG_DELTA 2  // Σ −(logp − base)   (token ratio)
#define P_RATIO 3      // Σ r                (token ratio)
#define P_BEHAVE 4     // Σ behaviour weight
#define P_BEHAVE_MAX 5 // max behaviour weight
#define P_HIGH 6       // count of CLIP_HIGH
#define P_LOW 7        // count of CLIP_LOW
#define P_DUAL 8       // count of CLIP_DUAL
#define P_CAPPED 9     // count of capped behaviour weights
#define P_DLDS 10      // Σ −A·g·w, dLoss/ds before the row weight (GSPO)
#define NP 11

// policy_status is what a call reports back; cuda/policy.go mirrors it.
struct policy_status {
	double policy;      // Σ_b coef_b·Σ_t loss·w
	double kl_weighted; // Σ_b coef_b·Σ_t kl
	double kl;          // Σ kl
	double ratio;       // Σ r over valid tokens
	double neg_delta;   // Σ −(logp − base)
	double behave;      // Σ behaviour weights
	double behave_max;  // max behaviour weight (1 without prox_logp)
	i64 clip_high, clip_low, dual, capped;
	i64 tokens, seqs;       // valid tokens; rows with one
	i64 mask_row, mask_col; // first mask entry not 0 or 1, −1 if none
	i64 count_error;        // 1: TokenCount too small, 2: SeqCount too small
	i64 bad_row;            // first row with a bad token, −1 if none
	u64 bad_key;            // its problem key
};

// check_token loads the inputs of token i and returns the problem with
// them (0 if none), in ppo's order: the sum of the inputs is finite exactly
// when each input is, so one test covers them all and the culprit is
// looked for only when it fails.
__device__ int check_token(i64 i, const float* logp, const float* old, const float* adv,
                           const float* prox, const float* ref, const float* tw,
                           double* l, double* o, double* a, double* p, double* r, double* w) {
	*l = logp[i];
	*o = old[i];
	*a = adv[i];
	double check = *l + *o + *a;
	if (prox) {
		*p = prox[i];
		check += *p;
	}
	if (ref) {
		*r = ref[i];
		check += *r;
	}
	if (tw) {
		*w = tw[i];
		check += *w;
		if (*w < 0) return BAD_WEIGHT;
	}
	if (isfinite(check)) return 0;
	if (!isfinite(*l)) return BAD_LOGP;
	if (!isfinite(*o)) return BAD_OLD;
	if (!isfinite(*a)) return BAD_ADV;
	if (prox && !isfinite(*p)) return BAD_PROX;
	if (ref && !isfinite(*r)) return BAD_REF;
	return BAD_TW;
}

// surrogate is ppo's clipper.surrogate: the per-token loss
// max(−a·r, −a·clip(r, lo, hi)), bounded by −dual·a for a < 0, the factor
// g ∈ {0, 1} of its derivative −a·r, and which bound is active. On a bound
// itself the unclipped branch wins, as torch's inclusive clamp does.
__device__ __forceinline__ double surrogate(double r, double a, double lo, double hi, double dual,
                                            double* g, int* clip) {
	if (a > 0 && r > hi) {
		*g = 0;
		*clip = CLIP_HIGH;
		return -a * hi;
	}
	if (a < 0 && r < lo) {
		*g = 0;
		*clip = CLIP_LOW;
		return -a * lo;
	}
	if (a < 0 && r > dual) {
		*g = 0;
		*clip = CLIP_DUAL;
		return -a * dual;
	}
	*g = 1;
	*clip = CLIP_NONE;
	return -a * r;
}

// behave_weight caps the decoupled-PPO behaviour weight e^x, x = prox − old:
// above cap_at it becomes cap_to (the cap, or 0 in mask mode; cap_at is
// +Inf without a cap); an infinite weight is 0 (docs/spec.md#policy-losses).
__device__ __forceinline__ double behave_weight(double x, double cap_at, double cap_to, i64* capped) {
	double w = exp(x);
	if (w > cap_at) {
		(*capped)++;
		return cap_to;
	}
	if (w > DBL_MAX) return 0;
	return w;
}

// kl_estimate returns Schulman's estimator est (1: k1 = x, 2: k2 = x²/2,
// 3: k3 = e^{−x} + x − 1) of x = logp − ref_logp and sets *dk to its
// derivative. k3 is clamped at kl_clamp (+Inf: off) with no gradient where
// the clamp binds: from above, as ppo's token-level loop does, or on both
// sides (both), as its sequence-level path does. (e^{−x} here is bit for
// bit ppo's e^{ref − logp}: negation is exact.)
__device__ __forceinline__ double kl_estimate(i64 est, double x, double kl_clamp, bool both, double* dk) {
	if (est == 1) {
		*dk = 1;
		return x;
	}
	if (est == 2) {
		*dk = x;
		return 0.5 * x * x;
	}
	double e = exp(-x);
	double v = e + x - 1;
	*dk = 1 - e;
	if (v > kl_clamp || (both && v < -kl_clamp)) {
		*dk = 0;
		return copysign(kl_clamp, v);
	}
	return v;
}

// block_partials reduces the thread accumulators acc[0..NP) of the block
// into out[0..NP) (thread 0 writes), P_BEHAVE_MAX by maximum.
__device__ void block_partials(double* acc, double* sh, double* out) {
	for (int k = 0; k < NP; k++) {
		double v = k == P_BEHAVE_MAX ? block_max(acc[k], sh) : block_sum(acc[k], sh);
		if (threadIdx.x == 0) out[k] = v;
	}
}

// policy_rows: grid B, one block per row. rowlen[b] = number of mask-1
// tokens, rowmask[b] = first column whose mask is neither 0 nor 1 (T if
// none). With seq != 0 (GSPO) it also checks every valid token's inputs,
// storing the row's smallest problem key in rowbad[b], and sums the
// log-ratios logp − base (base = prox if given, else old) into rowdelta[b].
// Without seq, rowbad[b] starts empty for policy_tokens.
extern "C" __global__ void policy_rows(const float* mask, const float* logp, const float* old,
                                       const float* adv, const float* prox, const float* ref,
                                       const float* tw, i64 T, i64 seq, i64* rowlen, i64* rowmask,
                                       double* rowdelta, u64* rowbad) {
	__shared__ i64 shi[THREADS];
	__shared__ double shd[THREADS];
	__shared__ u64 shu[THREADS];
	i64 b = blockIdx.x;
	const float* m = mask + b * T;
	i64 n = 0, badMask = T;
	double sum = 0;
	u64 key = NO_PROBLEM;
	for (i64 t = threadIdx.x; t < T; t += THREADS) {
		float mv = m[t];
		if (mv == 1.0f) {
			n++;
			if (seq) {
				double l, o, a, p = 0, r = 0, w = 0;
				int bad = check_token(b * T + t, logp, old, adv, prox, ref, tw, &l, &o, &a, &p, &r, &w);
				if (bad) {
					key = min_u64(key, problem_key(0, 0, t, bad));
				} else {
					sum += l - (prox ? p : o);
				}
			}
		} else if (mv != 0.0f) {
			badMask = min_i64(badMask, t);
		}
	}
	n = block_sum(n, shi);
	badMask = block_min(badMask, shi);
	sum = block_sum(sum, shd);
	key = block_min(key, shu);
	if (threadIdx.x == 0) {
		rowlen[b] = n;
		rowmask[b] = badMask;
		rowdelta[b] = sum;
		rowbad[b] = key;
	}
}

// policy_coef: one block. It counts tokens and sequences, finds the first
// row with a bad mask entry, checks Config.TokenCount and SeqCount, and
// writes each row's aggregation weight, so that the loss is
// Σ_b coef[b]·Σ_t L[b,t]·m[b,t] (ppo's rowWeights).
extern "C" __global__ void policy_coef(const i64* rowlen, const i64* rowmask, i64 B, i64 T, i64 mode,
                                       double norm, double token_count, double seq_count,
                                       double* coef, policy_status* st) {
	__shared__ i64 shi[THREADS];
	__shared__ double common_coef, bprime_sh;
	i64 total = 0, seqs = 0, maskRow = B;
	for (i64 b = threadIdx.x; b < B; b += THREADS) {
		i64 n = rowlen[b];
		total += n;
		seqs += n > 0;
		if (rowmask[b] < T) maskRow = min_i64(maskRow, b);
	}
	total = block_sum(total, shi);
	seqs = block_sum(seqs, shi);
	maskRow = block_min(maskRow, shi);
	if (threadIdx.x == 0) {
		i64 err = 0;
		double bprime = (double)seqs;
		if (seq_count > 0 && mode != AGG_TOKEN_MEAN && mode != AGG_TOKEN_SUM) {
			if (seq_count < bprime) err = 2;
			bprime = seq_count;
		}
		double c = 0;
		switch (mode) {
		case AGG_TOKEN_MEAN: {
			double n = (double)total;
			if (token_count > 0) {
				if (token_count < n && err == 0) err = 1;
				n = token_count;
			}
			if (n > 0) c = 1 / n;
			break;
		}
		case AGG_SEQ_MEAN_TOKEN_SUM:
			if (bprime > 0) c = 1 / bprime;
			break;
		case AGG_SEQ_MEAN_TOKEN_SUM_NORM: {
			double nm = norm;
			if (nm == 0) nm = (double)T;
			if (bprime > 0 && nm > 0) c = 1 / (bprime * nm);
			break;
		}
		case AGG_TOKEN_SUM:
			c = 1;
			break;
		}
		common_coef = c;
		bprime_sh = bprime;
		st->tokens = total;
		st->seqs = seqs;
		st->mask_row = maskRow < B ? maskRow : -1;
		st->mask_col = maskRow < B ? rowmask[maskRow] : -1;
		st->count_error = err;
	}
	__syncthreads();
	for (i64 b = threadIdx.x; b < B; b += THREADS) {
		i64 n = rowlen[b];
		double c = 0;
		if (n > 0) c = mode == AGG_SEQ_MEAN_TOKEN_MEAN ? 1 / (bprime_sh * (double)n) : common_coef;
		coef[b] = c;
	}
}

// policy_tokens: grid chunks·B, per-token ratio. Block b·chunks + c takes
// the LOSS_CHUNK tokens of chunk c of row b, computes ppo's token-level loss and
// gradient (tokenRange), writes grad = coef·dLoss/dlogp (0 at mask-0
// positions) and its partial sums to partial[(b·chunks + chunk)·NP …].
// Problems lower rowbad[b] (keys grouped by CPU block of 256 tokens, where
// ppo validates a block before it forms its gradients).
extern "C" __global__ void policy_tokens(const float* logp, const float* old, const float* adv,
                                         const float* mask, const float* prox, const float* ref,
                                         const float* tw, float* grad, i64 T, i64 chunks, double lo,
                                         double hi, double dual, double clamp, double beta,
                                         i64 kl_est, double kl_clamp, double cap_at, double cap_to,
                                         const double* coef, double* partial, u64* rowbad) {
	__shared__ double shd[THREADS];
	i64 b = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
	double c = coef[b];
	double acc[NP];
	for (int k = 0; k < NP; k++) acc[k] = 0;
	acc[P_BEHAVE_MAX] = 1;
	i64 high = 0, low = 0, dualn = 0;
	i64 capped = 0;
	u64 key = NO_PROBLEM;
	for (int k = 0; k < LOSS_PER; k++) {
		i64 t = chunk * LOSS_CHUNK + k * THREADS + threadIdx.x;
		if (t >= T) break;
		i64 i = b * T + t;
		if (mask[i] != 1.0f) {
			grad[i] = 0;
			continue;
		}
		double l, o, a, p = 0, r = 0, w = 0;
		int bad = check_token(i, logp, old, adv, prox, ref, tw, &l, &o, &a, &p, &r, &w);
		if (bad) {
			key = min_u64(key, problem_key((u64)(t >> 8), 0, t, bad));
			continue;
		}
		double base = prox ? p : o;
		double d = l - base;
		acc[P_NEG_DELTA] -= d;
		bool dead = false;
		if (d > clamp || d < -clamp) {
			d = copysign(clamp, d);
			dead = true; // torch's clamp passes no gradient where it binds
		}
		double ratio = exp(d);
		acc[P_RATIO] += ratio;
		double g;
		int clip;
		double loss = surrogate(ratio, a, lo, hi, dual, &g, &clip);
		high += clip == CLIP_HIGH;
		low += clip == CLIP_LOW;
		dualn += clip == CLIP_DUAL;
		if (dead) g = 0;
		double wt = 1;
		if (prox) {
			wt = behave_weight(p - o, cap_at, cap_to, &capped);
			acc[P_BEHAVE] += wt;
			acc[P_BEHAVE_MAX] = max_f64(acc[P_BEHAVE_MAX], wt);
		}
		if (tw) wt *= w;
		acc[P_POLICY] += loss * wt;
		double dl = -a * ratio * g * wt;
		if (ref) {
			double dk;
			acc[P_KL] += kl_estimate(kl_est, l - r, kl_clamp, false, &dk);
			dl += beta * dk;
		}
		// + 0 turns the −0 of a clipped token into +0, as ppo does.
		float gv = (float)(c * dl + 0);
		if (!isfinite(gv)) {
			key = min_u64(key, problem_key((u64)(t >> 8), 1, t, BAD_OVERFLOW));
			continue;
		}
		grad[i] = gv;
	}
	acc[P_HIGH] = (double)high;
	acc[P_LOW] = (double)low;
	acc[P_DUAL] = (double)dualn;
	acc[P_CAPPED] = (double)capped;
	if (key != NO_PROBLEM) atomicMin(&rowbad[b], key);
	block_partials(acc, shd, partial + (i64)blockIdx.x * NP);
}

// seq_ratio is the GSPO ratio of a row with n > 0 valid tokens and log-ratio
// sum sum: s = exp(clamp(sum/n)), live = 0 where the clamp binds (ppo's
// sequenceRow).
__device__ __forceinline__ double seq_ratio(double sum, i64 n, double clamp, double* live) {
	double md = sum / (double)n;
	*live = 1;
	if (md > clamp || md < -clamp) {
		md = copysign(clamp, md);
		*live = 0;
	}
	return exp(md);
}

// policy_seq_tokens: grid chunks·B, sequence ratio (GSPO). Block
// b·chunks + c takes chunk c of row b and, at the row's ratio s,
// computes the per-token loss, the KL part of the gradient (written to
// grad) and the block's Σ dℓ/ds for policy_seq_grad. The inputs were
// checked by policy_rows.
extern "C" __global__ void policy_seq_tokens(const float* logp, const float* old, const float* adv,
                                             const float* mask, const float* prox, const float* ref,
                                             const float* tw, float* grad, i64 T, i64 chunks,
                                             double lo, double hi, double dual, double clamp,
                                             double beta, i64 kl_est, double kl_clamp, double cap_at,
                                             double cap_to, const double* coef, const i64* rowlen,
                                             const double* rowdelta, double* partial) {
	__shared__ double shd[THREADS];
	i64 b = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
	double c = coef[b];
	i64 n = rowlen[b];
	double live;
	double s = n > 0 ? seq_ratio(rowdelta[b], n, clamp, &live) : 1;
	double acc[NP];
	for (int k = 0; k < NP; k++) acc[k] = 0;
	acc[P_BEHAVE_MAX] = 1;
	i64 high = 0, low = 0, dualn = 0;
	i64 capped = 0;
	for (int k = 0; k < LOSS_PER; k++) {
		i64 t = chunk * LOSS_CHUNK + k * THREADS + threadIdx.x;
		if (t >= T) break;
		i64 i = b * T + t;
		if (mask[i] != 1.0f) {
			grad[i] = 0;
			continue;
		}
		double a = adv[i];
		double wt = 1;
		if (prox) {
			wt = behave_weight((double)prox[i] - (double)old[i], cap_at, cap_to, &capped);
			acc[P_BEHAVE] += wt;
			acc[P_BEHAVE_MAX] = max_f64(acc[P_BEHAVE_MAX], wt);
		}
		if (tw) wt *= (double)tw[i];
		double g;
		int clip;
		double loss = surrogate(s, a, lo, hi, dual, &g, &clip);
		high += clip == CLIP_HIGH;
		low += clip == CLIP_LOW;
		dualn += clip == CLIP_DUAL;
		acc[P_POLICY] += loss * wt;
		acc[P_DLDS] -= a * g * wt;
		double dk = 0;
		if (ref) acc[P_KL] += kl_estimate(kl_est, (double)logp[i] - (double)ref[i], kl_clamp, true, &dk);
		grad[i] = (float)(c * beta * dk);
	}
	acc[P_HIGH] = (double)high;
	acc[P_LOW] = (double)low;
	acc[P_DUAL] = (double)dualn;
	acc[P_CAPPED] = (double)capped;
	block_partials(acc, shd, partial + (i64)blockIdx.x * NP);
}

// policy_seq_grad: grid chunks·B, GSPO. Adds the sequence part of the
// gradient, coef·(Σ_u dℓ_u/ds)·s·live/n, to every valid token of the row;
// the row's Σ is taken over its blocks' partials in order.
extern "C" __global__ void policy_seq_grad(const float* mask, float* grad, i64 T, i64 chunks,
                                           double clamp, const double* coef, const i64* rowlen,
                                           const double* rowdelta, const double* partial,
                                           u64* rowbad) {
	__shared__ float seq_sh;
	i64 b = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
	i64 n = rowlen[b];
	if (n == 0) return; // the whole block: grad is 0 already
	if (threadIdx.x == 0) {
		double dlds = 0;
		for (i64 k = 0; k < chunks; k++) dlds += partial[(b * chunks + k) * NP + P_DLDS];
		double live;
		double s = seq_ratio(rowdelta[b], n, clamp, &live);
		seq_sh = (float)(coef[b] * dlds * s * live / (double)n);
	}
	__syncthreads();
	float seq = seq_sh;
	u64 key = NO_PROBLEM;
	for (int k = 0; k < LOSS_PER; k++) {
		i64 t = chunk * LOSS_CHUNK + k * THREADS + threadIdx.x;
		if (t >= T) break;
		i64 i = b * T + t;
		if (mask[i] != 1.0f) continue;
		float gv = grad[i] + seq + 0.0f;
		if (!isfinite(gv)) {
			key = min_u64(key, problem_key(0, 1, t, BAD_OVERFLOW));
			continue;
		}
		grad[i] = gv;
	}
	if (key != NO_PROBLEM) atomicMin(&rowbad[b], key);
}

// policy_reduce: one block. Combines the partials row by row (blocks of a
// row in order) and the rows in a fixed tree, the way ppo's combine adds
// rows, and finds the first row with a problem.
extern "C" __global__ void policy_reduce(i64 B, i64 chunks, i64 seq, double clamp, const i64* rowlen,
                                         const double* rowdelta, const double* coef,
                                         const double* partial, const u64* rowbad,
                                         policy_status* st) {
	__shared__ double shd[THREADS];
	__shared__ i64 shi[THREADS];
	double policy = 0, klw = 0, kl = 0, ratio = 0, negDelta = 0, behave = 0, behaveMax = 1;
	i64 high = 0, low = 0, dual = 0, capped = 0, badRow = B;
	for (i64 b = threadIdx.x; b < B; b += THREADS) {
		if (rowbad[b] != NO_PROBLEM) badRow = min_i64(badRow, b);
		i64 n = rowlen[b];
		if (n == 0) continue;
		double row[NP];
		for (int j = 0; j < NP; j++) row[j] = 0;
		row[P_BEHAVE_MAX] = 1;
		for (i64 k = 0; k < chunks; k++) {
			const double* p = partial + (b * chunks + k) * NP;
			for (int j = 0; j < NP; j++) {
				if (j == P_BEHAVE_MAX) {
					row[j] = max_f64(row[j], p[j]);
				} else {
					row[j] += p[j];
				}
			}
		}
		if (seq) {
			double live;
			row[P_RATIO] = seq_ratio(rowdelta[b], n, clamp, &live) * (double)n;
			row[P_NEG_DELTA] = -rowdelta[b];
		}
		policy += coef[b] * row[P_POLICY];
		klw += coef[b] * row[P_KL];
		kl += row[P_KL];
		ratio += row[P_RATIO];
		negDelta += row[P_NEG_DELTA];
		behave += row[P_BEHAVE];
		behaveMax = max_f64(behaveMax, row[P_BEHAVE_MAX]);
		high += (i64)row[P_HIGH];
		low += (i64)row[P_LOW];
		dual += (i64)row[P_DUAL];
		capped += (i64)row[P_CAPPED];
	}
	policy = block_sum(policy, shd);
	klw = block_sum(klw, shd);
	kl = block_sum(kl, shd);
	ratio = block_sum(ratio, shd);
	negDelta = block_sum(negDelta, shd);
	behave = block_sum(behave, shd);
	behaveMax = block_max(behaveMax, shd);
	high = block_sum(high, shi);
	low = block_sum(low, shi);
	dual = block_sum(dual, shi);
	capped = block_sum(capped, shi);
	badRow = block_min(badRow, shi);
	if (threadIdx.x == 0) {
		st->policy = policy;
		st->kl_weighted = klw;
		st->kl = kl;
		st->ratio = ratio;
		st->neg_delta = negDelta;
		st->behave = behave;
		st->behave_max = behaveMax;
		st->clip_high = high;
		st->clip_low = low;
		st->dual = dual;
		st->capped = capped;
		st->bad_row = badRow < B ? badRow : -1;
		st->bad_key = badRow < B ? rowbad[badRow] : NO_PROBLEM;
	}
}
