// ref.c: the plain fused C loops that `rlpost bench -compare c` measures
// rlpost against. Each op does exactly the work of the rlpost op of the same
// name on the same batch: a loop over rows (OpenMP, OMP_NUM_THREADS threads),
// float32 storage, float64 recursions and sums, and glibc's vectorised expf
// (libmvec) for the exponentials. No -ffast-math: the compiler keeps IEEE
// semantics, and expf is vectorised only because it is declared `omp declare
// simd` below, which makes gcc call libmvec's _ZGV*v_expf (the AVX2 or
// AVX-512 variant, whichever -march=native picks).
//
// Build: cc -O3 -march=native -fopenmp -fno-math-errno ref.c -o cref -lmvec -lm
// (-fno-math-errno only tells gcc that expf need not set errno, without
// which it will not call the vector variant; results stay IEEE.)
// Usage: cref BATCH OP ITERS OUT
//   BATCH is the file internal/tool/bench writes (see compare.go), OP one of
//   policy_loss, gae, gae_whiten, bilevel_gae, group_advantages. The runner
//   makes two warm-up calls, then ITERS timed calls, prints the median call
//   in nanoseconds on stdout and writes the last call's outputs to OUT.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Selects written as ?: rather than fminf/fmaxf, whose NaN rules keep gcc
// from vectorising them without -ffinite-math-only.
#define MIN(x, y) ((x) < (y) ? (x) : (y))
#define MAX(x, y) ((x) > (y) ? (x) : (y))

#pragma omp declare simd notinbranch
extern float expf(float);

static int B, T;
static float *mask, *logp, *oldp, *refp, *adv_in, *rew, *val, *ends;
static float *grad, *adv, *ret;
static int *lens;
static double loss_out;

// policy_loss: token-mean, clip 0.2/0.28, dual clip 3, log-ratio clamp 20,
// k3 KL to the reference with β = 0.001, loss and dLoss/dlogp.
static void policy_loss(void) {
	const float lo = 0.8f, hi = 1.28f, dual = 3.0f, clamp = 20.0f;
	const double beta = 0.001;
	long total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
	for (int b = 0; b < B; b++) {
		const float *m = mask + (long)b * T;
		int n = 0;
		for (int t = 0; t < T; t++) n += m[t] == 1.0f;
		lens[b] = n;
		total += n;
	}
	const float coef = (float)(1.0 / (double)total);
	const float fbeta = (float)beta;
	double pol = 0, kl = 0;
#pragma omp parallel for reduction(+ : pol, kl) schedule(dynamic, 1)
	for (int b = 0; b < B; b++) {
		long o = (long)b * T;
		const float *m = mask + o, *lp = logp + o, *old = oldp + o, *ref = refp + o, *a = adv_in + o;
		float *g = grad + o;
		double p = 0, k = 0;
#pragma omp simd reduction(+ : p, k)
		for (int t = 0; t < T; t++) {
			float d0 = lp[t] - old[t];
			float d = MIN(MAX(d0, -clamp), clamp);
			float live = d == d0 ? 1.0f : 0.0f; // no gradient where the clamp binds
			float r = expf(d);
			float at = a[t];
			// The surrogate max(−A·r, −A·clip(r)), bounded by −c·A for
			// A < 0, as the ratio it uses; its gradient is 0 once clipped.
			float up = MIN(r, hi), dn = MIN(MAX(r, lo), dual);
			float use = at > 0.0f ? up : (at < 0.0f ? dn : r);
			float gg = use == r ? live : 0.0f;
			float x = lp[t] - ref[t];
			float e = expf(-x);
			float mt = m[t];
			p += (double)(mt * -at * use);
			k += (double)(mt * (e + x - 1.0f));
			g[t] = mt * coef * (-at * r * gg + fbeta * (1.0f - e));
		}
		pol += p;
		kl += k;
	}
	loss_out = pol / (double)total + beta * kl / (double)total;
}

// gae: token GAE with γ = 1, λ = 0.95 over the valid tokens of each row.
static void gae_rows(void) {
	const double g = 1.0, gl = 0.95;
#pragma omp parallel for schedule(dynamic, 1)
	for (int b = 0; b < B; b++) {
		long o = (long)b * T;
		const float *m = mask + o, *r = rew + o, *v = val + o;
		float *A = adv + o, *R = ret + o;
		double nv = 0, na = 0;
		for (int t = T - 1; t >= 0; t--) {
			if (m[t] != 1.0f) { A[t] = 0; R[t] = 0; continue; }
			double vt = v[t];
			double a = r[t] + g * nv - vt + gl * na;
			A[t] = (float)a;
			R[t] = (float)(a + vt);
			nv = vt;
			na = a;
		}
	}
}

// whiten: A ← (A − mean)/sqrt(var + 1e-8) over the valid tokens of the
// batch, unbiased variance, in two passes after the scan.
static void whiten(void) {
	double sum = 0;
	long n = 0;
#pragma omp parallel for reduction(+ : sum, n) schedule(static)
	for (int b = 0; b < B; b++) {
		long o = (long)b * T;
		double s = 0;
		long c = 0;
		for (int t = 0; t < T; t++)
			if (mask[o + t] == 1.0f) { s += adv[o + t]; c++; }
		sum += s;
		n += c;
	}
	double mean = sum / (double)n, ss = 0;
#pragma omp parallel for reduction(+ : ss) schedule(static)
	for (int b = 0; b < B; b++) {
		long o = (long)b * T;
		double s = 0;
		for (int t = 0; t < T; t++)
			if (mask[o + t] == 1.0f) { double d = adv[o + t] - mean; s += d * d; }
		ss += s;
	}
	double scale = 1.0 / sqrt(ss / (double)(n - 1) + 1e-8);
#pragma omp parallel for schedule(static)
	for (int b = 0; b < B; b++) {
		long o = (long)b * T;
		for (int t = 0; t < T; t++)
			if (mask[o + t] == 1.0f) adv[o + t] = (float)((adv[o + t] - mean) * scale);
	}
}

// bilevel_gae: VAGEN's Bi-Level GAE, γ 1 and λ 0.95 at both levels, turn
// advantage at turn ends (no token TD added).
static void bilevel(void) {
	const double gTok = 1.0, glTok = 0.95, gTurn = 1.0, glTurn = 0.95;
#pragma omp parallel for schedule(dynamic, 1)
	for (int b = 0; b < B; b++) {
		long o = (long)b * T;
		const float *m = mask + o, *r = rew + o, *v = val + o, *e = ends + o;
		float *A = adv + o, *R = ret + o;
		double nv = 0, na = 0, nvT = 0, naT = 0;
		for (int t = T - 1; t >= 0; t--) {
			if (m[t] != 1.0f) { A[t] = 0; R[t] = 0; continue; }
			double vt = v[t], a;
			if (e[t] == 1.0f) {
				a = r[t] + gTurn * nvT - vt + glTurn * naT;
				nvT = vt;
				naT = a;
			} else {
				a = r[t] + gTok * nv - vt + glTok * na;
			}
			A[t] = (float)a;
			R[t] = (float)(a + vt);
			nv = vt;
			na = a;
		}
	}
}

// group_advantages: GRPO over contiguous groups of 16 of all B·T rewards,
// group mean, unbiased group std, ε = 1e-6; an all-equal group is 0. Like
// grpo.Advantages it first takes the mean and spread of all rewards (its
// Stats report them), in two passes.
static double batch_mean, batch_ss;
static void group_adv(void) {
	const int G = 16;
	long n = (long)B * T, groups = n / G;
	double sum = 0, ss = 0;
#pragma omp parallel for simd reduction(+ : sum) schedule(static)
	for (long i = 0; i < n; i++) sum += rew[i];
	double mean = sum / (double)n;
#pragma omp parallel for simd reduction(+ : ss) schedule(static)
	for (long i = 0; i < n; i++) { double d = rew[i] - mean; ss += d * d; }
	batch_mean = mean, batch_ss = ss;
#pragma omp parallel for schedule(static)
	for (long k = 0; k < groups; k++) {
		const float *r = rew + k * G;
		float *d = adv + k * G;
		double sum = 0;
		int differ = 0;
		for (int i = 0; i < G; i++) { sum += r[i]; differ |= r[i] != r[0]; }
		if (!differ) { memset(d, 0, G * sizeof(float)); continue; }
		double mean = sum / G, ss = 0;
		for (int i = 0; i < G; i++) { double x = r[i] - mean; ss += x * x; }
		double scale = 1.0 / (sqrt(ss / (G - 1)) + 1e-6);
		for (int i = 0; i < G; i++) d[i] = (float)((r[i] - mean) * scale);
	}
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static float *readArr(FILE *f, long n) {
	float *p = aligned_alloc(64, ((n * sizeof(float)) + 63) / 64 * 64);
	if (!p || fread(p, sizeof(float), n, f) != (size_t)n) { fprintf(stderr, "cref: short batch file\n"); exit(1); }
	return p;
}

int main(int argc, char **argv) {
	if (argc != 5) { fprintf(stderr, "usage: cref BATCH OP ITERS OUT\n"); return 2; }
	FILE *f = fopen(argv[1], "rb");
	if (!f) { perror(argv[1]); return 1; }
	int32_t hdr[2];
	if (fread(hdr, sizeof hdr, 1, f) != 1) { fprintf(stderr, "cref: no header\n"); return 1; }
	B = hdr[0], T = hdr[1];
	long n = (long)B * T;
	mask = readArr(f, n), logp = readArr(f, n), oldp = readArr(f, n), refp = readArr(f, n);
	adv_in = readArr(f, n), rew = readArr(f, n), val = readArr(f, n), ends = readArr(f, n);
	fclose(f);
	grad = calloc(n, sizeof(float)), adv = calloc(n, sizeof(float)), ret = calloc(n, sizeof(float));
	lens = calloc(B, sizeof(int));
	void (*op)(void) = 0;
	const char *name = argv[2];
	if (!strcmp(name, "policy_loss")) op = policy_loss;
	else if (!strcmp(name, "gae")) op = gae_rows;
	else if (!strcmp(name, "bilevel_gae")) op = bilevel;
	else if (!strcmp(name, "group_advantages")) op = group_adv;
	int white = !strcmp(name, "gae_whiten");
	if (white) op = gae_rows;
	if (!op) { fprintf(stderr, "cref: unknown op %s\n", name); return 2; }
	int iters = atoi(argv[3]);
	if (iters < 1) iters = 1;
	double *times = malloc(iters * sizeof(double));
	for (int i = 0; i < 2 + iters; i++) {
		double t0 = now();
		op();
		if (white) whiten();
		double dt = now() - t0;
		if (i >= 2) times[i - 2] = dt;
	}
	qsort(times, iters, sizeof(double), cmp);
	double med = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
	printf("%.0f\n", med);
	FILE *o = fopen(argv[4], "wb");
	if (!o) { perror(argv[4]); return 1; }
	fwrite(&loss_out, sizeof loss_out, 1, o);
	if (!strcmp(name, "policy_loss")) fwrite(grad, sizeof(float), n, o);
	else {
		fwrite(adv, sizeof(float), n, o);
		if (strcmp(name, "group_advantages")) fwrite(ret, sizeof(float), n, o);
	}
	fclose(o);
	return 0;
}
