package gae_test

import "math"

// The reference estimators below follow docs/spec.md#gae and VAGEN Alg. 2 literally,
// one row at a time, with explicit lists of valid tokens and turn ends; the
// package's single-pass scans are checked against them. They assume valid
// input and compute in float64.

// validIndex returns the positions of the valid tokens of a mask row.
func validIndex(m []float64) []int {
	var idx []int
	for t, v := range m {
		if v == 1 {
			idx = append(idx, t)
		}
	}
	return idx
}

// refToken is token GAE over one row: each valid token looks ahead to the
// next valid one.
func refToken(r, v, m []float64, gamma, lam float64) (adv, ret []float64) {
	adv, ret = make([]float64, len(m)), make([]float64, len(m))
	idx := validIndex(m)
	next := 0.0 // advantage of the next valid token
	for i := len(idx) - 1; i >= 0; i-- {
		t := idx[i]
		nv := 0.0
		if i+1 < len(idx) {
			nv = v[idx[i+1]]
		}
		delta := r[t] + gamma*nv - v[t]
		adv[t] = delta + gamma*lam*next
		ret[t] = adv[t] + v[t]
		next = adv[t]
	}
	return adv, ret
}

// turnAdvantages is stage 1 of Alg. 2: the turn-level recursion over the
// turn ends of a row, returned by position.
func turnAdvantages(r, v, e []float64, gamma, lam float64) map[int]float64 {
	var ends []int
	for t, x := range e {
		if x == 1 {
			ends = append(ends, t)
		}
	}
	at := map[int]float64{}
	next, nextV := 0.0, 0.0
	for k := len(ends) - 1; k >= 0; k-- {
		t := ends[k]
		a := r[t] + gamma*nextV - v[t] + gamma*lam*next
		at[t] = a
		next, nextV = a, v[t]
	}
	return at
}

// turns splits the valid tokens of a row into turns, each ending at a turn
// end.
func turns(m, e []float64) [][]int {
	var out [][]int
	var cur []int
	for t := range m {
		if m[t] != 1 {
			continue
		}
		cur = append(cur, t)
		if e[t] == 1 {
			out = append(out, cur)
			cur = nil
		}
	}
	return out
}

// refBiLevel is Bi-Level GAE over one row, stage by stage: turn advantages
// first, then an inner recursion per turn seeded at its last token.
func refBiLevel(r, v, m, e []float64, gTok, lTok, gTurn, lTurn float64) (adv, ret []float64) {
	adv, ret = make([]float64, len(m)), make([]float64, len(m))
	turnA := turnAdvantages(r, v, e, gTurn, lTurn)
	for _, turn := range turns(m, e) {
		last := turn[len(turn)-1]
		adv[last] = turnA[last]
		for i := len(turn) - 2; i >= 0; i-- {
			t, n := turn[i], turn[i+1]
			adv[t] = r[t] + gTok*v[n] - v[t] + gTok*lTok*adv[n]
		}
		for _, t := range turn {
			ret[t] = adv[t] + v[t]
		}
	}
	return adv, ret
}

// refTurnLevel broadcasts each turn's advantage and λ-return to its tokens.
func refTurnLevel(r, v, m, e []float64, gamma, lam float64) (adv, ret []float64) {
	adv, ret = make([]float64, len(m)), make([]float64, len(m))
	turnA := turnAdvantages(r, v, e, gamma, lam)
	for _, turn := range turns(m, e) {
		last := turn[len(turn)-1]
		for _, t := range turn {
			adv[t], ret[t] = turnA[last], turnA[last]+v[last]
		}
	}
	return adv, ret
}

// refWhiten whitens the valid entries of rows in place, two-pass, with the
// unbiased variance; a single valid entry becomes 0.
func refWhiten(adv, mask [][]float64) {
	var n int
	var sum float64
	for b := range adv {
		for t, m := range mask[b] {
			if m == 1 {
				n++
				sum += adv[b][t]
			}
		}
	}
	if n == 0 {
		return
	}
	mean := sum / float64(n)
	var ss float64
	for b := range adv {
		for t, m := range mask[b] {
			if m == 1 {
				ss += (adv[b][t] - mean) * (adv[b][t] - mean)
			}
		}
	}
	variance := 0.0
	if n > 1 {
		variance = ss / float64(n-1)
	}
	scale := 1 / math.Sqrt(variance+1e-8)
	for b := range adv {
		for t, m := range mask[b] {
			if m == 1 {
				adv[b][t] = (adv[b][t] - mean) * scale
			}
		}
	}
}
