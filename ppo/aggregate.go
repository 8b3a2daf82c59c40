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
