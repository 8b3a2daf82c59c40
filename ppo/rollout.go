package ppo

import (
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/enum"
	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/tensor"
)

// Rollout correction: the inference engine that generated the tokens
// (log-probs Inputs.RolloutLogp) and the trainer that recomputes them
// (Inputs.OldLogp) disagree — precision, kernels, staleness. With ℓ =
// old_logp − rollout_logp per token (docs/spec.md#rollout-correction):
//
//   - importance weights (verl rollout_is): w = min(e^ℓ, threshold) per
//     token, or w = min(e^{Σ_t ℓ}, threshold) per sequence, a constant that
//     multiplies the policy term of each token, like a token weight
//     ("Your Efficient RL Framework Secretly Brings You Off-Policy RL
//     Training", Yao et al. 2025, truncated importance sampling);
//   - rejection (verl rollout_rs): tokens (token), or whole sequences
//     (sequence: e^{Σℓ}; geometric: e^{mean ℓ}) whose ratio falls outside
//     [lower, upper] leave the loss entirely — the mask, and with it every
//     aggregation denominator, loses them, as verl's modified
//     response_mask does.
//
// Log-ratios are clamped to ±20 before exp, as verl's SAFETY_BOUND. Both run
// as a row-parallel pass before the loss that writes an effective mask and
// token weights into the job's scratch, so every loss mode, and the
// assembly kernels, serve rollout-corrected batches unchanged.

// RolloutLevel is the level of rollout importance weights (verl rollout_is)
// or rejection (verl rollout_rs).
type RolloutLevel int

const (
	// RolloutOff: no weights (no rejection). The default.
	RolloutOff RolloutLevel = iota
	// RolloutToken: per token.
	RolloutToken
	// RolloutSequence: per sequence, with the product of the token ratios.
	RolloutSequence
	// RolloutGeometric: per sequence, with their geometric mean (rejection
	// only; verl rollout_rs "geometric").
	RolloutGeometric
)

var rolloutNames = [...]string{"", "token", "sequence", "geometric"}

func (l RolloutLevel) String() string {
	if l == RolloutOff {
		return "off"
	}
	return enum.Name(rolloutNames[:], int(l), "RolloutLevel")
}

// ParseRolloutLevel returns the level named "token", "sequence" or
// "geometric", and RolloutOff for "" (verl's null).
func ParseRolloutLevel(s string) (RolloutLevel, error) {
	i, err := enum.Parse(rolloutNames[:], s, "ppo", "rollout_level")
	return RolloutLevel(i), err
}

// DefaultRolloutISThreshold is verl's rollout_is_threshold.
const DefaultRolloutISThreshold = 2.0

// rolloutSafety bounds log-ratios before exp (verl's SAFETY_BOUND).
const rolloutSafety = 20.0

func (c Config) validateRollout() error {
	bad := func(field, format string, a ...any) error {
		return tensor.Errorf(tensor.ErrRange, "Config."+field, nil, format, a...)
	}
	switch {
	case c.RolloutIS < RolloutOff || c.RolloutIS > RolloutSequence:
		return bad("RolloutIS", "%v, want off, token or sequence", c.RolloutIS)
	case c.RolloutRS < RolloutOff || c.RolloutRS > RolloutGeometric:
		return bad("RolloutRS", "%v, want off, token, sequence or geometric", c.RolloutRS)
	case !(c.RolloutISThreshold >= 0) || math.IsInf(c.RolloutISThreshold, 1):
		return bad("RolloutISThreshold", "%v, want 0 (default %v) or a finite number > 0", c.RolloutISThreshold, DefaultRolloutISThreshold)
	case c.RolloutRS == RolloutOff && c.RolloutRSThreshold != 0:
		return bad("RolloutRSThreshold", "%v set, but RolloutRS is off, so it would be ignored", c.RolloutRSThreshold)
	case c.RolloutRS == RolloutOff && c.RolloutRSThresholdLower != 0:
		return bad("RolloutRSThresholdLower", "%v set, but RolloutRS is off, so it would be ignored", c.RolloutRSThresholdLower)
	case c.RolloutRS != RolloutOff && !(c.RolloutRSThreshold > 0 && !math.IsInf(c.RolloutRSThreshold, 1)):
		return bad("RolloutRSThreshold", "%v, want a finite number > 0 with rejection on (verl requires it too)", c.RolloutRSThreshold)
	case !(c.RolloutRSThresholdLower >= 0) || c.RolloutRS != RolloutOff && c.RolloutRSThresholdLower > c.RolloutRSThreshold:
		return bad("RolloutRSThresholdLower", "%v, want 0 (1/RolloutRSThreshold) or a number in (0, RolloutRSThreshold]", c.RolloutRSThresholdLower)
	case c.RolloutIS != RolloutOff && c.LossMode == GeoMean:
		return bad("RolloutIS", "not defined for loss mode geo_mean, whose loss is per sequence")
	case !(c.OffPolicySeqMaskKL >= 0) || math.IsInf(c.OffPolicySeqMaskKL, 1):
		return bad("OffPolicySeqMaskKL", "%v, want 0 (off) or a finite number > 0", c.OffPolicySeqMaskKL)
	case c.OffPolicySeqMaskKL > 0 && c.LossMode == GeoMean:
		return bad("OffPolicySeqMaskKL", "not defined for loss mode geo_mean, whose loss is per sequence")
	}
	if err := c.validateM2PO(); err != nil {
		return err
	}
	return c.validateRolloutKL()
}

func (in *Inputs[F]) validateRollout(cfg Config) error {
	if cfg.KLUnbiased && cfg.sequenceLevel() && !in.ProxLogp.IsZero() {
		return tensor.Errorf(tensor.ErrShape, "prox_logp", nil, "not defined with Config.KLUnbiased at the sequence level (the ratio to old_logp would be another sequence ratio)")
	}
	if cfg.M2POThreshold > 0 && in.ProxLogp.IsZero() {
		return tensor.Errorf(tensor.ErrShape, "prox_logp", nil, "missing, required with Config.M2POThreshold (M2PO's second moment is of old_logp − prox_logp)")
	}
	if in.RolloutLogp.IsZero() {
		if cfg.RolloutIS != RolloutOff || cfg.RolloutRS != RolloutOff {
			return tensor.Errorf(tensor.ErrShape, "rollout_logp", nil, "missing, required with Config.RolloutIS = %v, RolloutRS = %v", cfg.RolloutIS, cfg.RolloutRS)
		}
		if cfg.rolloutKL() || cfg.RolloutOutlierLow > 0 || cfg.RolloutOutlierHigh > 0 {
			return tensor.Errorf(tensor.ErrShape, "rollout_logp", nil, "missing, required with Config.RolloutRSKL or RolloutOutlierLow/High")
		}
		return nil
	}
	return tensor.CheckLike("rollout_logp", in.RolloutLogp, in.Logp)
}

// RolloutStats are the rollout–trainer mismatch metrics, under verl's names
// (rollout_corr/…); means are over the valid tokens (or sequences with a
// valid token) before rejection.
type RolloutStats struct {
	// KL is the mean of rollout_logp − old_logp (verl kl), K3KL the mean
	// of e^ℓ − ℓ − 1 (verl k3_kl).
	KL, K3KL float64
	// TrainingPPL and RolloutPPL are the per-sequence perplexities
	// exp(−mean_t logp) averaged over sequences (verl training_ppl,
	// rollout_ppl); PPLRatio averages exp(mean rollout_logp − mean old_logp)
	// (verl ppl_ratio).
	TrainingPPL, RolloutPPL, PPLRatio float64
	// ISMean is the mean importance weight over valid tokens before
	// truncation (verl rollout_is_mean, which verl takes before it
	// truncates); ISTruncatedFrac the fraction of weights (tokens, or
	// sequences at the sequence level) above the threshold (verl
	// rollout_is_ratio_fraction_high).
	ISMean, ISTruncatedFrac float64
	// RSMaskedFrac is the fraction of valid tokens rejected (verl
	// rollout_rs_masked_fraction); RSSeqMaskedFrac the fraction of
	// sequences with a rejected token (rollout_rs_seq_masked_fraction).
	RSMaskedFrac, RSSeqMaskedFrac float64
	// OffPolicyMaskedFrac is the fraction of sequences off-policy sequence
	// masking dropped (Config.OffPolicySeqMaskKL).
	OffPolicyMaskedFrac float64
	// ISMaskedFrac is the fraction of importance weights (tokens, or
	// sequences at the sequence level) RolloutISMask zeroed, or of
	// sequences RolloutISSeqMaskTIS zeroed.
	ISMaskedFrac float64
	// ISBatchNormFactor is the mean the weights were divided by
	// (Config.RolloutISBatchNormalize; verl rollout_is_batch_norm_factor),
	// 1 otherwise.
	ISBatchNormFactor float64
	// OutlierSeqMaskedFrac is the fraction of sequences the outlier-token
	// mask removed (SkyRL outlier_seq_masked_ratio).
	OutlierSeqMaskedFrac float64
	// M2POMaskedFrac is the fraction of valid tokens (after rejection)
	// M2PO's second-moment masking removed (Config.M2POThreshold).
	M2POMaskedFrac float64
}

// rolloutAcc is one row's rollout sums.
type rolloutAcc struct {
	n                             int // valid tokens
	logRatio, k3, oldSum, rollSum float64
	weights                       float64
	truncated, rejected           int
	bad, badCol                   int
	offMasked                     int
	maskBad                       bool // a mask value neither 0 nor 1
	// The divergence statistics (Σ clamped ℓ, Σ k2, max k2, max k3; Σ k3
	// is k3), the bounded weights' sum, the weights the mask zeroed, the
	// outlier tokens, and whether the row is an outlier sequence.
	lcSum, k2Sum, k2Max, k3Max float64
	isSum                      float64
	isMasked, outliers         int
	outlierSeq                 bool
	_                          [2]int64 // 192 bytes
}

// rolloutBounds are a call's rollout settings as the token pass reads them.
type rolloutBounds struct {
	isToken, isSeq bool
	rsToken        bool
	isMax          float64
	// lower and upper bound token-level rejection (±Inf when it is off);
	// seqLower and seqUpper sequence-level rejection.
	lower, upper, seqLower, seqUpper float64
	// isMode bounds the weights by [isMin, isMax]; kl are the divergence
	// rules; outLow and outHigh the outlier bounds (0 and +Inf when off).
	isMode          RolloutISMode
	isMin           float64
	kl              [MaxRolloutRSKL]klRule
	tokenKL, seqKL  bool
	outLow, outHigh float64
	outliers        bool
}

func (c *Config) rolloutBounds() rolloutBounds {
	p := rolloutBounds{isToken: c.RolloutIS == RolloutToken, isSeq: c.RolloutIS == RolloutSequence,
		isMax: c.RolloutISThreshold, lower: math.Inf(-1), upper: math.Inf(1)}
	if p.isMax == 0 {
		p.isMax = DefaultRolloutISThreshold
	}
	upper, lower := c.RolloutRSThreshold, c.RolloutRSThresholdLower
	if lower == 0 && upper > 0 {
		lower = 1 / upper
	}
	if c.RolloutRS == RolloutToken {
		p.rsToken, p.lower, p.upper = true, lower, upper
	} else {
		p.seqLower, p.seqUpper = lower, upper
	}
	p.isMode, p.isMin = c.RolloutISMode, c.RolloutISThresholdLower
	p.kl = c.rsKLRules()
	for _, r := range p.kl {
		p.tokenKL = p.tokenKL || r.on && r.tok
		p.seqKL = p.seqKL || r.on && !r.tok
	}
	p.outLow, p.outHigh = c.RolloutOutlierLow, cmpOr(c.RolloutOutlierHigh, math.Inf(1))
	p.outliers = c.RolloutOutlierLow > 0 || c.RolloutOutlierHigh > 0
	return p
}

// rolloutActive reports whether the call runs the pre-pass: to correct for
// the rollout engine, or to mask off-policy sequences.
func (j *policyJob[F]) rolloutActive() bool {
	return !j.in.RolloutLogp.IsZero() || j.cfg.OffPolicySeqMaskKL > 0 || j.cfg.M2POThreshold > 0
}

// prepareRollout allocates the scratch of the rollout pass (once per size).
func (j *policyJob[F]) prepareRollout() {
	size := j.in.Logp.Len()
	if cap(j.rcMask) < size {
		j.rcMask = make([]F, size)
		j.rcTW = make([]F, size)
	}
	j.rcMask, j.rcTW = j.rcMask[:size], j.rcTW[:size]
	b := j.in.Logp.B
	if cap(j.rcRows) < b {
		j.rcRows = make([]rolloutAcc, b)
	}
	j.rcRows = j.rcRows[:b]
}

// rolloutRow computes row b's rollout weights and rejections into the
// effective mask and token weights, its metric sums, and its length after
// rejection (−1 for a bad mask value), so that the loss needs no pass of
// its own to count the rows. The token-level work runs in the AVX2 kernel
// for float32 storage (internal/kernel RolloutTokens), which computes in
// float32 as the storage does, and in the Go loop, in float64, otherwise
// and for the rows the kernel hands back.
func (j *policyJob[F]) rolloutRow(b int) {
	acc := &j.rcRows[b]
	*acc = rolloutAcc{}
	cfg := &j.cfg
	p := cfg.rolloutBounds()
	start, n := j.in.Logp.Span(b)
	if !(j.fastExp && kernelLanes > 0 && !cfg.rolloutExtra() && j.rolloutKernel(start, n, &p, acc)) {
		// The Go loop; after the kernel, it redoes the row to name a bad
		// position or to compute what float32 could not.
		*acc = rolloutAcc{}
		if !j.rolloutRange(start, n, &p, acc) {
			return
		}
	}
	if !p.isToken {
		acc.weights, acc.truncated = 0, 0 // the token pass's, unused
		acc.isSum, acc.isMasked = 0, 0
	}
	// The sequence level, from the row's Σℓ.
	mask := j.in.Mask.Row(b)
	em, etw := j.rcMask[start:start+n], j.rcTW[start:start+n]
	seqW := func(l float64) float64 { return j.exp(min(max(l, -rolloutSafety), rolloutSafety)) }
	if acc.n > 0 {
		rejected := false
		switch cfg.RolloutRS {
		case RolloutSequence:
			w := seqW(acc.logRatio)
			rejected = !(w >= p.seqLower && w <= p.seqUpper)
		case RolloutGeometric:
			w := seqW(acc.logRatio / float64(acc.n))
			rejected = !(w >= p.seqLower && w <= p.seqUpper)
		}
		if p.seqKL && !p.seqKLKeep(acc) {
			rejected = true
		}
		if p.outliers && acc.outliers > 0 {
			rejected, acc.outlierSeq = true, true
		}
		if p.isMode == RolloutISSeqMaskTIS && p.isToken {
			// OpenRLHF's seq-mask-tis: the weights of a sequence whose
			// geometric-mean ratio is out of bounds become 0.
			if g := seqW(acc.logRatio / float64(acc.n)); g < p.isMin || g > p.isMax {
				acc.isMasked = 1
				for t, m := range mask {
					if m == 1 {
						etw[t] = 0
					}
				}
			}
		}
		if rejected {
			if j.rolloutMask() {
				for t, m := range mask {
					if m == 1 {
						em[t] = 0
					}
				}
			}
			acc.rejected = acc.n // and the row's length 0
		}
		if p.isSeq {
			raw := seqW(acc.logRatio)
			w, masked := p.isWeight(raw)
			if raw > p.isMax {
				acc.truncated = 1
			}
			if masked {
				acc.isMasked = 1
			}
			acc.isSum = float64(acc.n) * w
			acc.weights = float64(acc.n) * raw // verl's mean, before truncation
			for t, m := range mask {
				if m == 1 {
					etw[t] = F(float64(etw[t]) * w) // the token weight (or 1) times w
				}
			}
		}
	}
	if cfg.OffPolicySeqMaskKL > 0 && acc.n > 0 {
		roll := j.in.OldLogp.Row(b)
		if !j.in.RolloutLogp.IsZero() {
			roll = j.in.RolloutLogp.Row(b)
		}
		j.offPolicyMask(b, roll, etw)
	}
	j.lengths[b] = acc.n - acc.rejected
	if acc.maskBad {
		j.lengths[b] = -1
	}
}

// rolloutKernel runs the AVX2 kernel (F is float32 here) on the n tokens
// of the row that starts at flat index start, the last n mod 8 through a
// padded copy so that a token's result does not depend on its position,
// and adds its sums to acc; it reports false if an input was bad or a
// float32 sum overflowed, for the Go loop to redo the row.
func (j *policyJob[F]) rolloutKernel(start, n int, p *rolloutBounds, acc *rolloutAcc) bool {
	in := &j.in
	at := func(x []F, i int) *float32 { return (*float32)(unsafe.Pointer(&x[i])) }
	roll := in.OldLogp.Data // off-policy masking alone: ℓ = 0
	if !in.RolloutLogp.IsZero() {
		roll = in.RolloutLogp.Data
	}
	tw := in.TokenWeights.Data
	k := kernel.RolloutTokens{ // a value: pointers stored into it do not escape
		N: int64(n),
	}
	for _, f := range []struct {
		on   bool
		flag int64
	}{{tw != nil, kernel.RolloutTW}, {p.isToken, kernel.RolloutIS}, {p.rsToken, kernel.RolloutRS},
		{j.rolloutWeights(), kernel.RolloutEW}, {j.rolloutMask(), kernel.RolloutEM}} {
		if f.on {
			k.Flags |= f.flag
		}
	}
	k.RolloutBounds(p.isMax, p.lower, p.upper)
	if body := n &^ 7; body > 0 {
		k.Old, k.Roll, k.Mask, k.EMask, k.EW = at(in.OldLogp.Data, start), at(roll, start), at(in.Mask.Data, start), at(j.rcMask, start), at(j.rcTW, start)
		if tw != nil {
			k.TW = at(tw, start)
		}
		k.Run()
	}
	if tail := n & 7; tail > 0 {
		var old, rl, mask, w, em, ew [8]float32 // padding: mask 0
		from := start + n - tail
		for i := range tail {
			old[i], rl[i], mask[i] = float32(in.OldLogp.Data[from+i]), float32(roll[from+i]), float32(in.Mask.Data[from+i])
			if tw != nil {
				w[i] = float32(tw[from+i])
			}
		}
		k.Old, k.Roll, k.Mask, k.TW, k.EMask, k.EW, k.N = &old[0], &rl[0], &mask[0], &w[0], &em[0], &ew[0], 8
		k.Run()
		for i := range tail {
			j.rcMask[from+i], j.rcTW[from+i] = F(em[i]), F(ew[i])
		}
	}
	logRatio, oldSum := kernel.Sum(k.LogRatio), kernel.Sum(k.OldSum)
	rollSum := oldSum - logRatio
	k3, weights := kernel.Sum(k.K3), kernel.Sum(k.Weights)
	valid := kernel.Count(k.Valid)
	if !finite(logRatio+oldSum+rollSum+k3+weights) || kernel.Count(k.NonZero) != valid {
		return false
	}
	acc.n, acc.logRatio, acc.oldSum, acc.rollSum, acc.k3, acc.weights = valid, logRatio, oldSum, rollSum, k3, weights
	acc.truncated, acc.rejected = kernel.Count(k.Truncated), kernel.Count(k.Rejected)
	return true
}

// rolloutWeights reports whether the loss reads the effective token
// weights the rollout pass writes.
func (j *policyJob[F]) rolloutWeights() bool {
	return j.cfg.RolloutIS != RolloutOff || j.cfg.OffPolicySeqMaskKL > 0 || !j.in.TokenWeights.IsZero()
}

// rolloutMask reports whether the loss reads the effective mask the
// rollout pass writes. Without token-level rejection it differs from the
// caller's only on rejected sequences, whose length the pass sets to 0, and
// every row of the loss skips a row of length 0 (clearing its gradient);
// only a selection across rows (Clip-Cov, KL-Cov, top-ρ entropy masking)
// reads masks of such rows, and needs the copy.
func (j *policyJob[F]) rolloutMask() bool {
	c := &j.cfg
	tokenKL := false
	for _, r := range c.RolloutRSKL {
		tokenKL = tokenKL || r.Stat.token()
	}
	return c.RolloutRS == RolloutToken || tokenKL || c.M2POThreshold > 0 || c.LossMode == ClipCov || c.LossMode == KLCov || c.EntropyTopRatio > 0
}

// rolloutRange is the token-level pass in Go for the n tokens of the row
// that starts at flat index start, adding to acc; RolloutTokens
// (internal/kernel) states what it computes. Each block of tokens takes
// three steps: validate and gather the clamped log-ratios, exponentiate
// them together, then form weights and rejections. It reports false, with
// acc.bad set, at a non-finite log-prob on a valid token.
func (j *policyJob[F]) rolloutRange(start, n int, p *rolloutBounds, acc *rolloutAcc) bool {
	in := &j.in
	row := func(x []F) []F { return x[start : start+n] }
	old, mask := row(in.OldLogp.Data), row(in.Mask.Data)
	roll := old // the sampling policy's log-probs
	if !in.RolloutLogp.IsZero() {
		roll = row(in.RolloutLogp.Data)
	}
	var tw []F
	if !in.TokenWeights.IsZero() {
		tw = row(in.TokenWeights.Data)
	}
	em, etw := row(j.rcMask), row(j.rcTW)
	// The sums live in locals, not in *acc, so that they stay in registers.
	count, truncated, rejected, isMasked, outliers := 0, 0, 0, 0, 0
	var logRatio, oldSum, rollSum, k3, weights float64
	var lcSum, k2Sum, isSum float64
	k2Max, k3Max := math.Inf(-1), math.Inf(-1)
	var lc, exps [block]float64
	for s := 0; s < len(old); s += block {
		n := min(block, len(old)-s)
		for i := range n {
			t := s + i
			lc[i] = 0
			if mask[t] != 1 {
				continue
			}
			o, r := float64(old[t]), float64(roll[t])
			if (o+r)-(o+r) != 0 {
				acc.bad, acc.badCol = badInput, t
				return false
			}
			l := o - r
			count++
			logRatio += l
			oldSum += o
			rollSum += r
			lc[i] = min(max(l, -rolloutSafety), rolloutSafety)
		}
		j.expSlice(exps[:n], lc[:n])
		for i := range n {
			t := s + i
			m := mask[t]
			em[t] = m
			w := 1.0
			if tw != nil {
				w = float64(tw[t])
			}
			if m != 1 {
				acc.maskBad = acc.maskBad || m != 0 // left for the mask check
				etw[t] = F(w)
				continue
			}
			kk3 := exps[i] - lc[i] - 1
			k3 += kk3
			e := float64(F(exps[i])) // the weight as the storage type holds it
			weights += e             // the metric is verl's, before truncation
			if e > p.isMax {
				truncated++
			}
			if p.isToken {
				iw, masked := p.isWeight(e)
				if masked {
					isMasked++
				}
				isSum += iw
				w *= iw
			}
			etw[t] = F(w)
			rej := !(e >= p.lower && e <= p.upper)
			if p.tokenKL && !p.tokenKLKeep(lc[i], exps[i]) {
				rej = true
			}
			if rej {
				em[t] = 0
				rejected++
			}
			if p.seqKL {
				k2 := 0.5 * lc[i] * lc[i]
				lcSum += lc[i]
				k2Sum += k2
				k2Max, k3Max = max(k2Max, k2), max(k3Max, kk3)
			}
			if p.outliers && p.outlier(e) {
				outliers++
			}
		}
	}
	acc.n += count
	acc.logRatio += logRatio
	acc.oldSum += oldSum
	acc.rollSum += rollSum
	acc.k3 += k3
	acc.weights += weights
	acc.truncated += truncated
	acc.rejected += rejected
	acc.lcSum, acc.k2Sum, acc.k2Max, acc.k3Max = lcSum, k2Sum, k2Max, k3Max
	acc.isSum, acc.isMasked, acc.outliers = isSum, isMasked, outliers
	return true
}

// offPolicyMask is off-policy sequence masking ("DeepSeek-V3.2: Pushing the
// Frontier of Open Large Language Models", arXiv 2512.02556, §3.1): a
// sequence whose mean advantage is negative and whose mean
// log(π_sample/π_θ) exceeds δ = Config.OffPolicySeqMaskKL loses its policy
// term (weight 0; it stays in the denominators). π_sample is the rollout
// engine when Inputs.RolloutLogp is given, OldLogp otherwise. The decision
// is a constant of logp.
func (j *policyJob[F]) offPolicyMask(b int, roll, etw []F) {
	in := &j.in
	lp, adv, mask := in.Logp.Row(b), in.Advantages.Row(b), in.Mask.Row(b)
	var kl, a float64
	n := 0
	for t, m := range mask {
		if m == 1 {
			kl += float64(roll[t]) - float64(lp[t])
			a += float64(adv[t])
			n++
		}
	}
	if !(a < 0 && kl/float64(n) > j.cfg.OffPolicySeqMaskKL) {
		return
	}
	j.rcRows[b].offMasked = 1
	for t, m := range mask {
		if m == 1 {
			etw[t] = 0
		}
	}
}

// rolloutStats combines the rows' sums.
func (j *policyJob[F]) rolloutStats() (RolloutStats, error) {
	var s RolloutStats
	var tokens, seqs, rejectedSeqs, truncated, rejected, offMasked, isMasked, outlierSeqs int
	var logRatio, k3, weights, trainPPL, rollPPL, ratio float64
	for b := range j.rcRows {
		acc := &j.rcRows[b]
		if acc.bad != badNone {
			return s, nonFiniteAt(b, acc.badCol, named[F]{"old_logp", j.in.OldLogp}, named[F]{"rollout_logp", j.in.RolloutLogp})
		}
		if acc.n == 0 {
			continue
		}
		n := float64(acc.n)
		tokens += acc.n
		seqs++
		logRatio += acc.logRatio
		k3 += acc.k3
		weights += acc.weights
		truncated += acc.truncated
		rejected += acc.rejected
		if acc.rejected > 0 {
			rejectedSeqs++
		}
		offMasked += acc.offMasked
		isMasked += acc.isMasked
		if acc.outlierSeq {
			outlierSeqs++
		}
		trainPPL += math.Exp(-acc.oldSum / n)
		rollPPL += math.Exp(-acc.rollSum / n)
		ratio += math.Exp((acc.rollSum - acc.oldSum) / n)
	}
	if tokens == 0 {
		return s, nil
	}
	nt, ns := float64(tokens), float64(seqs)
	s.KL, s.K3KL = -logRatio/nt, k3/nt
	s.TrainingPPL, s.RolloutPPL, s.PPLRatio = trainPPL/ns, rollPPL/ns, ratio/ns
	s.RSMaskedFrac, s.RSSeqMaskedFrac = float64(rejected)/nt, float64(rejectedSeqs)/ns
	s.OffPolicyMaskedFrac = float64(offMasked) / ns
	s.OutlierSeqMaskedFrac = float64(outlierSeqs) / ns
	s.ISBatchNormFactor = 1
	switch j.cfg.RolloutIS {
	case RolloutToken:
		s.ISMean, s.ISTruncatedFrac = weights/nt, float64(truncated)/nt
		s.ISMaskedFrac = float64(isMasked) / nt
		if j.cfg.RolloutISMode == RolloutISSeqMaskTIS {
			s.ISMaskedFrac = float64(isMasked) / ns
		}
	case RolloutSequence:
		s.ISMean, s.ISTruncatedFrac = weights/nt, float64(truncated)/ns
		s.ISMaskedFrac = float64(isMasked) / ns
	default:
		s.ISMean = 1
	}
	return s, nil
}
