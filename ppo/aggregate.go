package ppo

import "github.com/rlpost/rlpost/tensor"

// rowWeights writes into coef[b] the weight a valid token of row b carries in
// the aggregate, so that agg(L) = Σ_b coef[b]·Σ_t L[b,t]·m[b,t]. lengths are
// the valid tokens per row, total their sum, t the padded length.
func rowWeights(coef []float64, lengths []int, total, t int, r Reduction) error {
	seqs := 0
	for _, n := range lengths {
		if n > 0 {
			seqs++
		}
	}
	bPrime := float64(seqs)
	if r.SeqCount > 0 && r.Mode != TokenMean && r.Mode != TokenSum {
		if r.SeqCount < bPrime {
			return tensor.Errorf(tensor.ErrRange, "Config.SeqCount", nil,
				"%v is less than the %d sequences with a valid token in this batch", r.SeqCount, seqs)
		}
		bPrime = r.SeqCount
	}
	var c float64
	switch r.Mode {
	case TokenMean:
		n := float64(total)
		if r.TokenCount > 0 {
			if r.TokenCount < n {
				return tensor.Errorf(tensor.ErrRange, "Config.TokenCount", nil,
					"%v is less than the %d valid tokens in this batch", r.TokenCount, total)
			}
			n = r.TokenCount
		}
		if n > 0 {
			c = 1 / n
		}
	case SeqMeanTokenSum:
		if bPrime > 0 {
			c = 1 / bPrime
		}
	case SeqMeanTokenSumNorm:
		norm := r.Norm
		if norm == 0 {
			norm = float64(t)
		}
		if r.NormWithoutSeqs {
			c = 1 / norm
		} else if bPrime > 0 && norm > 0 {
			c = 1 / (bPrime * norm)
		}
	case TokenSum:
		c = 1
	case PromptMean:
		return promptWeights(coef, lengths, r)
	case SeqMeanTokenMean:
		for b, n := range lengths {
			coef[b] = 0
			if n > 0 {
				coef[b] = 1 / (bPrime * float64(n))
			}
		}
		return nil
	}
	for b, n := range lengths {
		coef[b] = 0
		if n > 0 {
			coef[b] = c
		}
	}
	return nil
}

// promptWeights is PromptMean's coef: 1/(P·N_p) on the rows of prompt p,
// N_p the prompt's valid tokens and P the number of prompts with a valid
// token (SkyRL counts a prompt without one too; it adds nothing either way
// but P).
func promptWeights(coef []float64, lengths []int, r Reduction) error {
	g := r.GroupSize
	if len(lengths)%g != 0 {
		return tensor.Errorf(tensor.ErrShape, "Config.GroupSize", nil, "%d rows are not whole prompts of %d rows", len(lengths), g)
	}
	prompts := 0
	for p := 0; p < len(lengths); p += g {
		for _, n := range lengths[p : p+g] {
			if n > 0 {
				prompts++
				break
			}
		}
	}
	for p := 0; p < len(lengths); p += g {
		np := 0
		for _, n := range lengths[p : p+g] {
			np += max(n, 0)
		}
		for b := p; b < p+g; b++ {
			coef[b] = 0
			if lengths[b] > 0 {
				coef[b] = 1 / (float64(prompts) * float64(np))
			}
		}
	}
	return nil
}

// dropZeroVariance sets to 0 the lengths of the rows of every group
// (Reduction.GroupSize rows, or one row) whose valid advantages are all 0,
// so that the loss skips them and no denominator counts them. A call whose
// rows are not whole groups keeps its rows: rowWeights reports it for
// PromptMean, and for the other modes the last, partial group is judged on
// its own rows.
func (j *policyJob[F]) dropZeroVariance() {
	g := max(j.cfg.GroupSize, 1)
	in := &j.in
	for p := 0; p < len(j.lengths); p += g {
		rows := j.lengths[p:min(p+g, len(j.lengths))]
		zero := true
		for i := range rows {
			adv, mask := in.Advantages.Row(p+i), in.Mask.Row(p+i)
			for t, m := range mask {
				if m == 1 && adv[t] != 0 {
					zero = false
					break
				}
			}
			if !zero {
				break
			}
		}
		if zero {
			clear(rows)
		}
	}
}
