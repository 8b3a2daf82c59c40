package ppo

import (
	"cmp"
	"slices"
)

// covCand is a token Clip-Cov or KL-Cov may pick: its flat index k = b·T + t,
// its covariance, and (Clip-Cov) its place in the seeded order.
type covCand struct {
	key uint64
	cov float64
	k   int
}

// selectCov marks in j.picked the tokens Clip-Cov or KL-Cov acts on
// (docs/spec.md#loss-modes). With μ_A and μ_logp the means over the batch's
// valid tokens and cov = (A − μ_A)·(logp − μ_logp), per token:
//
//   - KL-Cov picks the n = max(1, ⌊N·KLCovRatio⌋) valid tokens of highest
//     cov, ties to the lower flat index (verl: torch.topk, whose order among
//     ties is unspecified).
//   - Clip-Cov (whose means divide by N + ClipCovMeanEps) picks
//     n = max(1, ⌊N·ClipCovRatio⌋) tokens, or all if fewer
//     qualify, among the valid tokens that the surrogate does not clip and
//     whose ClipCovLow < cov < ClipCovHigh; verl draws them with
//     torch.randperm, rlpost in the order of splitmix64(ClipCovSeed ⊕ k), a
//     fixed pseudo-random order, so one seed always picks the same tokens.
//
// N is the number of valid tokens of this call: the selection is per batch,
// and a batch cut into micro-batches picks per micro-batch, as verl does.
func (j *policyJob[F]) selectCov(total int) {
	in := &j.in
	size := in.Logp.Len()
	if cap(j.picked) < size {
		j.picked = make([]bool, size)
	}
	j.picked = j.picked[:size]
	clear(j.picked)
	if total == 0 {
		return
	}
	lp, adv, mask := in.Logp.Data[:size], in.Advantages.Data[:size], in.Mask.Data[:size]
	var sa, sl float64
	for k, m := range mask {
		if m != 0 {
			sa += float64(adv[k])
			sl += float64(lp[k])
		}
	}
	n := float64(total)
	ma, ml := sa/n, sl/n
	if j.cfg.LossMode == ClipCov && j.cfg.ClipCovMeanEps > 0 {
		// verl's masked_mean (Config.ClipCovMeanEps).
		ma, ml = sa/(n+j.cfg.ClipCovMeanEps), sl/(n+j.cfg.ClipCovMeanEps)
	}
	clipCov := j.cfg.LossMode == ClipCov
	ratio := j.rules.covRatio
	cands := j.cands[:0]
	T := in.Logp.T
	for b := range in.Logp.B {
		start, rowLen := in.Logp.Span(b)
		for t, m := range mask[start : start+rowLen] {
			if m == 0 {
				continue
			}
			k := start + t
			// Clip-Cov's order keys on b·T + t, the flat index in the padded
			// layout, so a packed batch picks what its rows padded would.
			cands = j.covCandidate(cands, k, b*T+t, ma, ml, clipCov)
		}
	}
	j.cands = cands
	count := min(max(1, int(n*ratio)), len(cands))
	if clipCov {
		slices.SortFunc(cands, func(x, y covCand) int { return cmp.Or(cmp.Compare(x.key, y.key), cmp.Compare(x.k, y.k)) })
	} else {
		slices.SortFunc(cands, func(x, y covCand) int { return cmp.Or(cmp.Compare(y.cov, x.cov), cmp.Compare(x.k, y.k)) })
	}
	for _, c := range cands[:count] {
		j.picked[c.k] = true
	}
}

// covCandidate appends token k (at padded index pk) to cands if selectCov
// may pick it.
func (j *policyJob[F]) covCandidate(cands []covCand, k, pk int, ma, ml float64, clipCov bool) []covCand {
	in := &j.in
	rl := &j.rules
	lp, adv := in.Logp.Data, in.Advantages.Data
	a := float64(adv[k])
	cov := (a - ma) * (float64(lp[k]) - ml)
	if clipCov {
		base := float64(in.OldLogp.Data[k])
		if !in.ProxLogp.IsZero() {
			base = float64(in.ProxLogp.Data[k])
		}
		d, _ := rl.logRatio(float64(lp[k]) - base)
		r := j.exp(d)
		if a > 0 && r > rl.hi || a < 0 && r < rl.lo || !(cov > rl.covLo && cov < rl.covHi) {
			return cands
		}
		return append(cands, covCand{key: splitmix64(j.cfg.ClipCovSeed ^ uint64(pk)), k: k})
	}
	if cov != cov { // a NaN input is reported by the row pass
		return cands
	}
	return append(cands, covCand{cov: cov, k: k})
}

// splitmix64 is the output function of Steele, Lea and Flood's SplitMix64
// ("Fast Splittable Pseudorandom Number Generators", OOPSLA 2014): a
// bijection of 64-bit words that scatters neighbouring inputs.
func splitmix64(x uint64) uint64 {
	z := x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
