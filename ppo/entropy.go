package ppo

import (
	"cmp"
	"math"
	"slices"

	"github.com/rlpost/rlpost/tensor"
)

// An entropy term and top-ρ entropy masking (docs/spec.md#entropy).
//
// With Inputs.Entropy = H (the per-token entropy of π_θ, computed by the
// trainer) and Config.EntropyCoeff = c, the loss subtracts c·agg(H) with
// Config.Reduction (verl entropy_coeff), so dLoss/dH_{b,t} =
// −c·coef_b on valid tokens; PolicyLoss writes it to Inputs.EntropyGrad
// when given, for the trainer to back-propagate through its entropy.
//
// With Config.EntropyTopRatio = ρ > 0 only the n = max(1, ⌊ρ·N + ½⌋)
// valid tokens of highest entropy keep their policy term ("Beyond the 80/20
// Rule: High-Entropy Minority Tokens Drive Effective Reinforcement Learning
// for LLM Reasoning", arXiv 2506.01939, §5: ρ = 0.2); ties go to the lower
// flat index b·T + t. The other tokens keep their place in the
// aggregation's denominator and their KL and entropy terms.

func (c Config) validateEntropy() error {
	switch {
	case math.IsNaN(c.EntropyCoeff) || math.IsInf(c.EntropyCoeff, 0):
		return tensor.Errorf(tensor.ErrRange, "Config.EntropyCoeff", nil, "%v, want a finite number", c.EntropyCoeff)
	case !(c.EntropyTopRatio >= 0 && c.EntropyTopRatio <= 1):
		return tensor.Errorf(tensor.ErrRange, "Config.EntropyTopRatio", nil, "%v, want 0 (off) or a fraction in (0, 1]", c.EntropyTopRatio)
	case c.EntropyTopRatio > 0 && c.LossMode == GeoMean:
		return tensor.Errorf(tensor.ErrRange, "Config.EntropyTopRatio", nil, "not defined for loss mode geo_mean, whose loss is per sequence")
	}
	return nil
}

func (in *Inputs[F]) validateEntropy(cfg Config) error {
	if !in.Entropy.IsZero() {
		if err := tensor.CheckLike("entropy", in.Entropy, in.Logp); err != nil {
			return err
		}
	} else if cfg.EntropyCoeff != 0 || cfg.EntropyTopRatio > 0 || !in.EntropyGrad.IsZero() {
		return tensor.Errorf(tensor.ErrShape, "entropy", nil,
			"missing, required with Config.EntropyCoeff = %v, Config.EntropyTopRatio = %v or an EntropyGrad destination", cfg.EntropyCoeff, cfg.EntropyTopRatio)
	}
	if !in.EntropyGrad.IsZero() {
		if err := tensor.CheckLike("entropy_grad", in.EntropyGrad, in.Logp); err != nil {
			return err
		}
		if err := in.disjoint("entropy_grad", in.EntropyGrad.Data); err != nil {
			return err
		}
	}
	return nil
}

// selectTopEntropy marks in j.keep the tokens whose policy term top-ρ
// masking keeps. A non-finite entropy is never kept; the entropy row
// reports it.
func (j *policyJob[F]) selectTopEntropy(total int) {
	in := &j.in
	size := in.Logp.Len()
	if cap(j.keep) < size {
		j.keep = make([]bool, size)
	}
	j.keep = j.keep[:size]
	clear(j.keep)
	cands := j.cands[:0]
	for k, m := range in.Mask.Data[:size] {
		if h := float64(in.Entropy.Data[k]); m != 0 && h-h == 0 {
			cands = append(cands, covCand{cov: h, k: k})
		}
	}
	j.cands = cands
	n := min(max(1, int(j.cfg.EntropyTopRatio*float64(total)+0.5)), len(cands))
	slices.SortFunc(cands, func(x, y covCand) int { return cmp.Or(cmp.Compare(y.cov, x.cov), cmp.Compare(x.k, y.k)) })
	for _, c := range cands[:n] {
		j.keep[c.k] = true
	}
}

// dropped reports whether top-ρ masking removes the policy term of token
// k = b·T + t.
func (j *policyJob[F]) dropped(k int) bool {
	return j.cfg.EntropyTopRatio > 0 && !j.keep[k]
}

// entropyRow sums row b's entropy over valid tokens and writes dLoss/dH.
func (j *policyJob[F]) entropyRow(b int) {
	acc := &j.rows[b]
	in := &j.in
	start, _ := in.Logp.Span(b)
	h, mask := in.Entropy.Row(b), in.Mask.Row(b)
	var eg []F
	if !in.EntropyGrad.IsZero() {
		eg = in.EntropyGrad.Row(b)
	}
	d := F(-j.cfg.EntropyCoeff*j.coef[b] + 0)
	for t := range h {
		if mask[t] == 0 {
			if eg != nil {
				eg[t] = 0
			}
			continue
		}
		v := float64(h[t])
		if v-v != 0 {
			acc.bad, acc.badCol = badInput, t
			return
		}
		acc.entropy += v
		if j.cfg.EntropyTopRatio > 0 && j.keep[start+t] {
			acc.kept++
		}
		if eg != nil {
			eg[t] = d
		}
	}
}
