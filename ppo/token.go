package ppo

import (
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/tensor"
)

// block is how many tokens the token-level kernel handles per pass: the
// exponentials of a block are evaluated together (see kernel.ExpSlice), and
// its scratch arrays stay in L1.
const block = 256

// expSlice sets dst[i] = e^src[i], fast for float32 storage and with
// math.Exp's precision for float64.
func (j *policyJob[F]) expSlice(dst, src []float64) {
	if j.fastExp {
		kernel.ExpSlice(dst, src)
		return
	}
	for i, x := range src {
		dst[i] = math.Exp(x)
	}
}

// rowSums are the running sums of one row of the token-level kernel.
type rowSums struct {
	policy, kl, negDelta, ratio float64
	behave, behaveMax           float64
	clips                       [4]int // indexed by clipNone, clipHigh, clipLow, clipDual
	capped                      int
}

// tokenRow is the token-level kernel for row b: the assembly for float32
// storage where the processor has it (internal/kernel: sixteen lanes with
// AVX-512, eight with AVX2, the same bits either way), with the Go loop for
// the last T mod 8 tokens, and the Go loop alone otherwise. T is
// the row's length: the batch's T, or the row's own in a packed batch. A row
// the assembly flags as bad is recomputed in Go to name the position.
func (j *policyJob[F]) tokenRow(b int) {
	acc := &j.rows[b]
	grad, _ := j.gradRow(b)
	T := len(grad)
	if j.lengths[b] == 0 {
		clear(grad)
		return
	}
	s := rowSums{behaveMax: 1}
	from := 0
	if j.fastExp && kernelLanes > 0 && T >= 8 && (j.in.RefLogp.IsZero() || j.rules.kernelServes()) && j.cfg.EntropyTopRatio == 0 {
		if j.kernelRow(b, T, &s) {
			from = T &^ 7
		} else {
			s = rowSums{behaveMax: 1}
		}
	}
	if from < T {
		if bad, col := j.tokenRange(b, from, T, &s); bad != badNone {
			acc.bad, acc.badCol = bad, col
			return
		}
	}
	acc.policy, acc.kl, acc.negDelta, acc.ratio = s.policy, s.kl, s.negDelta, s.ratio
	acc.behave, acc.behaveMax, acc.capped = s.behave, s.behaveMax, s.capped
	acc.clipLow, acc.clipHigh, acc.dual = s.clips[clipLow], s.clips[clipHigh], s.clips[clipDual]
}

// kernelRow runs the assembly kernel on the first T&^7 of the T tokens of
// row b (F is float32 here) and adds its sums to s; it reports false if a
// lane was bad.
func (j *policyJob[F]) kernelRow(b, T int, s *rowSums) bool {
	in := &j.in
	start, _ := in.Logp.Span(b) // every batch of the call shares the layout
	ptr := func(x tensor.Batch[F]) *float32 {
		if x.IsZero() {
			return nil
		}
		return (*float32)(unsafe.Pointer(&x.Data[start]))
	}
	flag := func(x tensor.Batch[F]) int64 {
		if x.IsZero() {
			return 0
		}
		return 1
	}
	r := &j.rules
	k := &kernel.PolicyTokens{
		Logp: ptr(in.Logp), Old: ptr(in.OldLogp), Adv: ptr(in.Advantages), Mask: ptr(in.Mask),
		Prox: ptr(in.ProxLogp), Ref: ptr(in.RefLogp), TW: ptr(in.TokenWeights),
		Grad:    (*float32)(unsafe.Pointer(&j.grad[start])),
		N:       int64(T),
		HasProx: flag(in.ProxLogp), HasRef: flag(in.RefLogp), HasTW: flag(in.TokenWeights),
		Lo: kernel.Splat(r.lo), Hi: kernel.Splat(r.hi), Dual: kernel.Splat(r.dual),
		Clamp: kernel.Splat(r.clamp), NegClamp: kernel.Splat(r.clampLo),
		Beta: kernel.Splat(r.beta), Coef: kernel.Splat(j.coef[b]),
		KLClamp: kernel.Splat(r.klClamp), CapAt: kernel.Splat(r.capAt), CapTo: kernel.Splat(r.capTo),
		BehaveMax: kernel.Splat(1),
	}
	if k.HasRef != 0 {
		k.KL = r.est.kernelCode()
	}
	k.RunLanes(kernelLanes)
	policy, kl, negDelta := kernel.Sum(k.Policy), kernel.Sum(k.KLSum), kernel.Sum(k.NegDelta)
	ratio, behave := kernel.Sum(k.Ratio), kernel.Sum(k.Behave)
	// A sum that overflowed in float32 terms (finite in float64) also
	// sends the row to the Go loop.
	if k.Bad != 0 || !finite(policy+kl+negDelta+ratio+behave) {
		return false
	}
	s.policy += policy
	s.kl += kl
	s.negDelta += negDelta
	s.ratio += ratio
	s.behave += behave
	s.behaveMax = max(s.behaveMax, kernel.Max(k.BehaveMax))
	s.clips[clipHigh] += kernel.Count(k.High)
	s.clips[clipLow] += kernel.Count(k.Low)
	s.clips[clipDual] += kernel.Count(k.DualN)
	s.capped += kernel.Count(k.Capped)
	return true
}

// finite reports whether x is neither infinite nor NaN.
func finite(x float64) bool { return x-x == 0 }

// tokenRange is the token-level kernel in Go for tokens [from, to) of row b,
// adding to s. Each block of tokens takes three passes: gather the
// log-ratios (validating as it goes), exponentiate them together, then form
// losses and gradients. It returns the kind and column of the first bad
// token, if any.
func (j *policyJob[F]) tokenRange(b, from, to int, s *rowSums) (bad, col int) {
	in := &j.in
	first, _ := in.Logp.Span(b)
	coef := j.coef[b]
	row := func(x tensor.Batch[F]) []F {
		if x.IsZero() {
			return nil
		}
		return x.Data[first+from : first+to]
	}
	lp, old, adv, mask := row(in.Logp), row(in.OldLogp), row(in.Advantages), row(in.Mask)
	prox, ref, tw := row(in.ProxLogp), row(in.RefLogp), row(in.TokenWeights)
	grad := j.grad[first+from : first+to]
	rl := &j.rules
	beta := rl.beta
	k3 := ref != nil && rl.needExp()
	var ratio, behave, negKL [block]float64
	var dead [block]bool
	for start := 0; start < len(lp); start += block {
		n := min(block, len(lp)-start)
		lp, old, adv, mask, grad := lp[start:start+n], old[start:start+n], adv[start:start+n], mask[start:start+n], grad[start:start+n]
		// Pass 1: log-ratios, clamped; a float64 sum of a token's inputs is
		// finite exactly when each input is, so one test per token checks
		// them all.
		for i := range n {
			if mask[i] == 0 {
				ratio[i], negKL[i], behave[i] = 0, 0, 0
				continue
			}
			l, base := float64(lp[i]), float64(old[i])
			check := l + base + float64(adv[i])
			if prox != nil {
				p := float64(prox[i+start])
				check += p
				behave[i] = p - base
				base = p
			}
			if ref != nil {
				r := float64(ref[i+start])
				check += r
				xc, _ := rl.klInput(l - r)
				negKL[i] = -xc
			}
			if tw != nil {
				w := float64(tw[i+start])
				check += w
				if w < 0 {
					return badWeight, from + start + i
				}
			}
			if check-check != 0 {
				return badInput, from + start + i
			}
			d := l - base
			s.negDelta -= d
			d, live := rl.logRatio(d)
			dead[i] = !live
			ratio[i] = d
		}
		// Pass 2: the exponentials.
		j.expSlice(ratio[:n], ratio[:n])
		if k3 {
			j.expSlice(negKL[:n], negKL[:n])
		}
		if prox != nil {
			j.expSlice(behave[:n], behave[:n])
		}
		// Pass 3: losses and gradients.
		for i := range n {
			if mask[i] == 0 {
				grad[i] = 0
				continue
			}
			a, r := float64(adv[i]), ratio[i]
			s.ratio += r
			loss, g, c := rl.surrogate(r, a)
			s.clips[c]++
			if dead[i] {
				g = 0 // torch's clamp passes no gradient where it binds
			}
			w := 1.0
			if prox != nil {
				var hit bool
				if w, hit = rl.behave(behave[i]); hit {
					s.capped++
				}
				s.behave += w
				s.behaveMax = max(s.behaveMax, w)
			}
			if tw != nil {
				w *= float64(tw[i+start])
			}
			if j.dropped(first + from + start + i) {
				w = 0
			}
			s.policy += loss * w
			dl := -a * r * g * w
			if ref != nil {
				k, dk := rl.kl(float64(lp[i])-float64(ref[i+start]), negKL[i])
				if rl.klUnbiased {
					k, dk = j.unbiasedKL(k, dk, float64(lp[i]), float64(old[i]), r, !dead[i], prox != nil)
				}
				s.kl += k
				dl += beta * dk
			}
			// + 0 turns the −0 of a clipped token into +0, as the
			// assembly produces it.
			gv := F(coef*dl + 0)
			if gv-gv != 0 {
				return badOverflow, from + start + i
			}
			grad[i] = gv
		}
	}
	return badNone, 0
}
