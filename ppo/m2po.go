package ppo

import (
	"cmp"
	"math"
	"slices"

	"github.com/rlpost/rlpost/tensor"
)

// m2Token is one valid token's second moment (old_logp − prox_logp)² and
// flat index, for M2PO's selection.
type m2Token struct {
	m2   float64
	k, b int
}

func (c Config) validateM2PO() error {
	switch {
	case !(c.M2POThreshold >= 0) || math.IsInf(c.M2POThreshold, 1):
		return tensor.Errorf(tensor.ErrRange, "Config.M2POThreshold", nil, "%v, want 0 (off) or a finite number > 0", c.M2POThreshold)
	case !(c.KLInputClamp >= 0) || math.IsInf(c.KLInputClamp, 1):
		return tensor.Errorf(tensor.ErrRange, "Config.KLInputClamp", nil, "%v, want 0 (off) or a finite number > 0", c.KLInputClamp)
	}
	return nil
}

// m2poMask is M2PO's second-moment masking (second-moment trust policy
// optimisation, as AReaL implements it: m2_threshold): over the call's valid tokens
// (after rejection), with m2 = (old_logp − prox_logp)², the tokens of
// largest m2 leave the mask, and every denominator, one by one until the
// mean m2 of those left is below τ = Config.M2POThreshold; if no such point
// comes, all but the smallest leave. Ties of m2 go to the lower flat index
// (AReaL's torch.sort does not fix their order). The suffix sums are
// accumulated from the smallest m2 up, as AReaL's flipped cumsum. It
// returns the number of tokens masked.
func (j *policyJob[F]) m2poMask() int {
	in := &j.in
	mask := j.rcMask
	toks := slices.Grow(j.m2[:0], in.Logp.Len()) // one allocation, when a job first meets the size
	for b := range in.Logp.B {
		start, n := in.Logp.Span(b)
		old, prox := in.OldLogp.Data[start:start+n], in.ProxLogp.Data[start:start+n]
		for t, m := range mask[start : start+n] {
			if m == 1 {
				d := float64(old[t]) - float64(prox[t])
				if d-d != 0 {
					// A non-finite input masks nothing: the loss pass
					// names it.
					j.m2 = toks
					return 0
				}
				toks = append(toks, m2Token{d * d, start + t, b})
			}
		}
	}
	j.m2 = toks
	n := len(toks)
	if n == 0 {
		return 0
	}
	slices.SortFunc(toks, func(a, b m2Token) int {
		if c := cmp.Compare(b.m2, a.m2); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	// The first i whose suffix mean is below τ; suffix sums from the end.
	cut := n - 1
	suffix := 0.0
	for i := n - 1; i >= 0; i-- {
		suffix += toks[i].m2
		if suffix/float64(n-i) < j.cfg.M2POThreshold {
			cut = i
		}
	}
	for _, tok := range toks[:cut] {
		mask[tok.k] = 0
		j.lengths[tok.b]--
	}
	return cut
}
