// Temporal Advantage Shaping weights (docs/spec.md#tas), the GPU twin of
// tas.Weights for float32 storage. The k-th valid token of a row with n
// valid tokens gets w = 1 + λ·(s0 + s1·x²), x = k·2/(n−1) − 1 (parabolic:
// s0 = 0, s1 = 1; inverse: s0 = 1, s1 = −1; uniform, or n ≤ 1: w = 1), and
// mask-0 positions get 0. k is a prefix count of the mask, which one block
// per row forms tile by tile: each thread counts its chunk of PER tokens,
// the block scans the counts, and the count carries into the next tile.
#include "common.cuh"

#define BAD_MASK 1
#define BAD_OVERFLOW 2

#define SHAPE_PARABOLIC 0
#define SHAPE_UNIFORM 1
#define SHAPE_INVERSE 2

// tas_status is what a call reports back; cuda/tas.go mirrors it.
struct tas_status {
	u64 bad_row; // first row with a problem, NO_PROBLEM if none
};

// tas_weights: grid B, one block per row. rowbad[b] gets the row's problem
// key: the first mask entry that is neither 0 nor 1 (then nothing is
// written), else the first weight that overflows float32.
extern "C" __global__ void tas_weights(const float* mask, float* dst, i64 T, double lambda, i64 shape,
                                       u64* rowbad, tas_status* st) {
	__shared__ float sm[TILE_PAD];
	__shared__ i64 shi[THREADS];
	__shared__ u64 shu[THREADS];
	i64 b = blockIdx.x;
	const float* m = mask + b * T;
	float* out = dst + b * T;
	i64 n = 0, bad = T;
	for (i64 t = threadIdx.x; t < T; t += THREADS) {
		float v = m[t];
		if (v == 1.0f) {
			n++;
		} else if (v != 0.0f) {
			bad = min_i64(bad, t);
		}
	}
	n = block_sum(n, shi);
	bad = block_min(bad, shi);
	if (bad < T) {
		report_row(problem_key(0, 0, bad, BAD_MASK), shu, b, rowbad, &st->bad_row);
		return; // the whole block: bad is the same in every thread
	}
	// The row's curve, as tas's Config.curve; λ multiplies last so that a
	// large λ cannot cancel the 1.
	double lam = 0, s0 = 0, s1 = 0, step = 0;
	if (n > 1 && shape != SHAPE_UNIFORM) {
		lam = lambda;
		step = 2 / (double)(n - 1);
		if (shape == SHAPE_INVERSE) {
			s0 = 1;
			s1 = -1;
		} else {
			s1 = 1;
		}
	}
	int lo = threadIdx.x * PER;
	i64 carry = 0;
	u64 key = NO_PROBLEM;
	for (i64 t0 = 0; t0 < T; t0 += TILE) {
		for (int j = threadIdx.x; j < TILE; j += THREADS) {
			i64 t = t0 + j;
			sm[pad(j)] = t < T ? m[t] : 0;
		}
		__syncthreads();
		i64 count = 0;
		for (int k = 0; k < PER; k++) count += sm[pad(lo + k)] == 1.0f;
		i64 total;
		i64 k0 = carry + block_exclusive_scan(count, shi, &total);
		double kf = (double)k0; // the valid token's index, as tas counts it
		for (int k = 0; k < PER; k++) {
			int j = pad(lo + k);
			if (sm[j] != 1.0f) {
				sm[j] = 0;
				continue;
			}
			double x = kf * step - 1;
			float w = (float)((1 + lam * (s0 + s1 * (x * x))) * 1.0);
			if (!isfinite(w)) key = min_u64(key, problem_key(0, 1, t0 + lo + k, BAD_OVERFLOW));
			sm[j] = w;
			kf++;
		}
		__syncthreads();
		for (int j = threadIdx.x; j < TILE; j += THREADS) {
			i64 t = t0 + j;
			if (t < T) out[t] = sm[pad(j)];
		}
		carry += total;
		__syncthreads();
	}
	report_row(key, shu, b, rowbad, &st->bad_row);
}
