package ppo

import (
	"fmt"
	"math"

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
	if l < 0 || int(l) >= len(rolloutNames) {
		return fmt.Sprintf("RolloutLevel(%d)", int(l))
	}
	return rolloutNames[l]
}

// ParseRolloutLevel returns the level named "token", "sequence" or
// "geometric", and RolloutOff for "" (verl's null).
func ParseRolloutLevel(s string) (RolloutLevel, error) {
	for i, n := range rolloutNames {
		if n == s {
			return RolloutLevel(i), nil
		}
	}
	return 0, fmt.Errorf("ppo: unknown rollout level %q (want \"token\", \"sequence\", \"geometric\" or \"\" for off)", s)
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
	return nil
}

func (in *Inputs[F]) validateRollout(cfg Config) error {
	if in.RolloutLogp.IsZero() {
		if cfg.RolloutIS != RolloutOff || cfg.RolloutRS != RolloutOff {
			return tensor.Errorf(tensor.ErrShape, "rollout_logp", nil, "missing, required with Config.RolloutIS = %v, RolloutRS = %v", cfg.RolloutIS, cfg.RolloutRS)
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
}

// rolloutAcc is one row's rollout sums.
type rolloutAcc struct {
	n                         int // valid tokens
	diff, k3, oldSum, rollSum float64
	weights                   float64
	truncated, rejected       int
	bad, badCol               int
	offMasked                 int
	_                         [5]int64 // 128 bytes
}

// rolloutActive reports whether the call runs the pre-pass: to correct for
// the rollout engine, or to mask off-policy sequences.
func (j *policyJob[F]) rolloutActive() bool {
	return !j.in.RolloutLogp.IsZero() || j.cfg.OffPolicySeqMaskKL > 0
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
// effective mask and token weights, and its metric sums.
func (j *policyJob[F]) rolloutRow(b int) {
	acc := &j.rcRows[b]
	*acc = rolloutAcc{}
	in := &j.in
	start, n := in.Logp.Span(b)
	old, mask := in.OldLogp.Row(b), in.Mask.Row(b)
	roll := old // the sampling policy's log-probs
	if !in.RolloutLogp.IsZero() {
		roll = in.RolloutLogp.Row(b)
	}
	em, etw := j.rcMask[start:start+n], j.rcTW[start:start+n]
	var tw []F
	if !in.TokenWeights.IsZero() {
		tw = in.TokenWeights.Row(b)
	}
	cfg := &j.cfg
	// Pass 1, a block at a time: validate, sum, and exponentiate the
	// clamped log-ratios together (kernel.ExpSlice for float32 storage).
	// The sums live in locals, not in *acc, so that they stay in registers.
	var buf [block]float64
	var count int
	var diff, oldSum, rollSum, k3 float64
	for start := 0; start < len(old); start += block {
		n := min(block, len(old)-start)
		for i := range n {
			t := start + i
			buf[i] = 0
			if mask[t] != 1 {
				continue
			}
			o, r := float64(old[t]), float64(roll[t])
			if (o+r)-(o+r) != 0 {
				acc.bad, acc.badCol = badInput, t
				return
			}
			l := o - r
			count++
			diff -= l
			oldSum += o
			rollSum += r
			ls := min(max(l, -rolloutSafety), rolloutSafety)
			k3 -= ls + 1
			buf[i] = ls
		}
		j.expSlice(buf[:n], buf[:n])
		for i := range n {
			if mask[start+i] == 1 {
				k3 += buf[i]
				etw[start+i] = F(buf[i]) // e^ℓ, kept for the weights and rejection below
			}
		}
	}
	acc.n, acc.diff, acc.oldSum, acc.rollSum, acc.k3 = count, diff, oldSum, rollSum, k3
	upper, lower := cfg.RolloutRSThreshold, cfg.RolloutRSThresholdLower
	if lower == 0 && upper > 0 {
		lower = 1 / upper
	}
	isMax := cfg.RolloutISThreshold
	if isMax == 0 {
		isMax = DefaultRolloutISThreshold
	}
	seqSum := -acc.diff // Σ ℓ
	seqW := func(l float64) float64 { return j.exp(min(max(l, -rolloutSafety), rolloutSafety)) }
	seqRejected := false
	switch cfg.RolloutRS {
	case RolloutSequence:
		w := seqW(seqSum)
		seqRejected = acc.n > 0 && !(w >= lower && w <= upper)
	case RolloutGeometric:
		if acc.n > 0 {
			w := seqW(seqSum / float64(acc.n))
			seqRejected = !(w >= lower && w <= upper)
		}
	}
	seqIS, seqRaw := 1.0, 1.0
	if cfg.RolloutIS == RolloutSequence && acc.n > 0 {
		seqIS = seqW(seqSum)
		seqRaw = seqIS
		if seqIS > isMax {
			seqIS = isMax
			acc.truncated = 1
		}
	}
	var weights float64
	var truncated, rejected int
	for t := range old {
		m := mask[t]
		em[t] = m
		w := 1.0
		if tw != nil {
			w = float64(tw[t])
		}
		if m != 1 {
			etw[t] = F(w)
			continue // padding, or a bad mask value left for the mask check
		}
		e := float64(etw[t]) // e^ℓ, clamped, from the first pass
		switch cfg.RolloutIS {
		case RolloutToken:
			x := e
			if x > isMax {
				x = isMax
				truncated++
			}
			weights += e // the metric is verl's, before truncation
			w *= x
		case RolloutSequence:
			weights += seqRaw
			w *= seqIS
		}
		etw[t] = F(w)
		reject := seqRejected
		if cfg.RolloutRS == RolloutToken {
			reject = !(e >= lower && e <= upper)
		}
		if reject {
			em[t] = 0
			rejected++
		}
	}
	acc.weights, acc.truncated, acc.rejected = weights, acc.truncated+truncated, rejected
	if cfg.OffPolicySeqMaskKL > 0 && acc.n > 0 {
		j.offPolicyMask(b, roll, etw)
	}
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
	var tokens, seqs, rejectedSeqs, truncated, rejected, offMasked int
	var diff, k3, weights, trainPPL, rollPPL, ratio float64
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
		diff += acc.diff
		k3 += acc.k3
		weights += acc.weights
		truncated += acc.truncated
		rejected += acc.rejected
		if acc.rejected > 0 {
			rejectedSeqs++
		}
		offMasked += acc.offMasked
		trainPPL += math.Exp(-acc.oldSum / n)
		rollPPL += math.Exp(-acc.rollSum / n)
		ratio += math.Exp((acc.rollSum - acc.oldSum) / n)
	}
	if tokens == 0 {
		return s, nil
	}
	nt, ns := float64(tokens), float64(seqs)
	s.KL, s.K3KL = diff/nt, k3/nt
	s.TrainingPPL, s.RolloutPPL, s.PPLRatio = trainPPL/ns, rollPPL/ns, ratio/ns
	s.RSMaskedFrac, s.RSSeqMaskedFrac = float64(rejected)/nt, float64(rejectedSeqs)/ns
	s.OffPolicyMaskedFrac = float64(offMasked) / ns
	switch j.cfg.RolloutIS {
	case RolloutToken:
		s.ISMean, s.ISTruncatedFrac = weights/nt, float64(truncated)/nt
	case RolloutSequence:
		s.ISMean, s.ISTruncatedFrac = weights/nt, float64(truncated)/ns
	default:
		s.ISMean = 1
	}
	return s, nil
}
