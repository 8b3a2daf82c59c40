package ppo

// sequenceRow is the GSPO row: one ratio s = exp(mean_t Δ_t) for the whole
// sequence, clipped per token's advantage, with dLoss/dlogp_t =
// (Σ_u pcoef·w_u·∂ℓ_u/∂s)·s/|y| + coef·β·∂kl_t, the derivative of
// exp(mean Δ) reaching every token of the sequence equally. GSPO-token
// gives each token its own term instead: pcoef·w_t·∂ℓ_t/∂s·s + coef·β·∂kl_t.
// coef is the aggregation's weight of the row's tokens, pcoef the policy
// term's (policyCoef: the same unless PolicySeqMeanTokenMean). With
// Config.KLUnbiased the KL term is s·Σ_t k_t (TRL's sequence-level
// coef_1), whose gradient adds coef·β·Σk·s/|y| to every token.
func (j *policyJob[F]) sequenceRow(b int) {
	acc := &j.rows[b]
	in := &j.in
	n := j.lengths[b]
	grad, start := j.gradRow(b)
	if n == 0 {
		clear(grad)
		return
	}
	coef, pcoef := j.coef[b], j.policyCoef(b)
	lp, old, adv, mask := in.Logp.Row(b), in.OldLogp.Row(b), in.Advantages.Row(b), in.Mask.Row(b)
	var prox, ref, tw []F
	if !in.ProxLogp.IsZero() {
		prox = in.ProxLogp.Row(b)
	}
	if !in.RefLogp.IsZero() {
		ref = in.RefLogp.Row(b)
	}
	if !in.TokenWeights.IsZero() {
		tw = in.TokenWeights.Row(b)
	}
	// Pass 1: validate and take the mean log-ratio.
	var sumDelta float64
	for t := range lp {
		if mask[t] == 0 {
			continue
		}
		l, a, base := float64(lp[t]), float64(adv[t]), float64(old[t])
		check := l + a + base
		if prox != nil {
			check += float64(prox[t])
			base = float64(prox[t])
		}
		if tw != nil {
			check += float64(tw[t])
			if tw[t] < 0 {
				acc.bad, acc.badCol = badWeight, t
				return
			}
		}
		if ref != nil {
			check += float64(ref[t])
		}
		if check-check != 0 {
			acc.bad, acc.badCol = badInput, t
			return
		}
		sumDelta += l - base
	}
	rl := &j.rules
	md, ok := rl.logRatio(sumDelta / float64(n))
	live := 1.0
	if !ok {
		live = 0
	}
	s := j.exp(md)
	acc.negDelta = -sumDelta
	acc.ratio = s * float64(n)
	// Pass 2: per-token losses; the KL part of the gradient goes to grad
	// now, the sequence part once its sum is known.
	beta := rl.beta
	tokenGrad := j.cfg.LossMode == GSPOToken
	var clips [4]int
	var sumPolicy, sumKL, dLds float64
	for t := range lp {
		if mask[t] == 0 {
			grad[t] = 0
			continue
		}
		a := float64(adv[t])
		w := j.policyWeight(acc, prox, old, tw, t, start+t)
		loss, g, c := rl.surrogate(s, a)
		clips[c]++
		sumPolicy += loss * w
		var own float64 // GSPO-token: this token's own share
		if tokenGrad {
			own = pcoef * -a * g * w * s * live
		} else {
			dLds -= a * g * w
		}
		var dk float64
		if ref != nil {
			var k float64
			k, dk = j.refKL(float64(lp[t]) - float64(ref[t]))
			sumKL += k
		}
		if rl.klUnbiased {
			dk *= s // the KL term weighed by the sequence ratio (klIS)
		}
		grad[t] = F(coef*beta*dk + own)
	}
	seq := pcoef * dLds * s * live / float64(n)
	if rl.klUnbiased && ref != nil {
		// d(s·Σk)/dlogp_t also reaches every token through s.
		seq += coef * beta * sumKL * s * live / float64(n)
		sumKL *= s
	}
	for t := range lp {
		if mask[t] == 0 {
			continue
		}
		gv := grad[t] + F(seq) + 0
		if gv-gv != 0 {
			acc.bad, acc.badCol = badOverflow, t
			return
		}
		grad[t] = gv
	}
	acc.policy, acc.kl = sumPolicy, sumKL
	acc.clipLow, acc.clipHigh, acc.dual = clips[clipLow], clips[clipHigh], clips[clipDual]
}
