package ppo

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/internal/enum"
	"github.com/rlpost/rlpost/tensor"
)

// The two-sided rollout corrections of the peers (docs/spec.md#rollout-correction):
// how the importance weight is bounded (truncated, or masked to 0 inside
// the denominator), verl's divergence-based rejection, SkyRL's outlier-token
// sequence mask and verl's batch normalisation. They run in the rollout
// pass beside the ratio-bounded rejection of RolloutRS; rolloutBounds holds
// their constants and its methods are their one definition.

// RolloutISMode is how the rollout importance weight e = exp(ℓ) of
// Config.RolloutIS is bounded by [Config.RolloutISThresholdLower,
// Config.RolloutISThreshold].
type RolloutISMode int

const (
	// RolloutISTruncate is truncated importance sampling (TIS): w =
	// clamp(e, lower, upper), lower 0 meaning no lower bound (verl
	// rollout_is; TRL vllm_importance_sampling_mode "token_truncate" and
	// "sequence_truncate"; OpenRLHF vllm_is_correction_type "tis"). The
	// default.
	RolloutISTruncate RolloutISMode = iota
	// RolloutISMask is masked importance sampling (IcePop, MIS): w = e
	// inside [lower, upper] and 0 outside, the token staying in every
	// denominator, where RolloutRS removes it (TRL "token_mask",
	// "sequence_mask"; OpenRLHF "icepop").
	RolloutISMask
	// RolloutISSeqMaskTIS is OpenRLHF's "seq-mask-tis": the token weight e,
	// unbounded, and 0 on every token of a sequence whose geometric-mean
	// ratio exp(mean ℓ) is outside [lower, upper] (the token staying in the
	// denominators). Token level only.
	RolloutISSeqMaskTIS
)

var rolloutISModeNames = [...]string{"truncate", "mask", "seq_mask_tis"}

func (m RolloutISMode) String() string {
	return enum.Name(rolloutISModeNames[:], int(m), "RolloutISMode")
}

// ParseRolloutISMode returns the mode named "truncate", "mask" or
// "seq_mask_tis".
func ParseRolloutISMode(s string) (RolloutISMode, error) {
	i, err := enum.Parse(rolloutISModeNames[:], s, "ppo", "rollout_is_mode")
	return RolloutISMode(i), err
}

// RolloutRSStat is one divergence statistic of verl's rejection
// (rollout_corr_helper's rollout_rs options), on ℓ = old_logp −
// rollout_logp clamped to ±20: k1 = −ℓ, k2 = ℓ²/2, k3 = e^ℓ − 1 − ℓ, per
// token, or their sum, mean or maximum over a sequence's valid tokens.
type RolloutRSStat int

const (
	// RSOff is an unused slot of Config.RolloutRSKL.
	RSOff RolloutRSStat = iota
	RSTokenK1
	RSTokenK2
	RSTokenK3
	RSSeqSumK1
	RSSeqSumK2
	RSSeqSumK3
	RSSeqMeanK1
	RSSeqMeanK2
	RSSeqMeanK3
	RSSeqMaxK2
	RSSeqMaxK3
)

var rsStatNames = [...]string{"", "token_k1", "token_k2", "token_k3", "seq_sum_k1", "seq_sum_k2", "seq_sum_k3",
	"seq_mean_k1", "seq_mean_k2", "seq_mean_k3", "seq_max_k2", "seq_max_k3"}

func (s RolloutRSStat) String() string {
	if s == RSOff {
		return "off"
	}
	return enum.Name(rsStatNames[:], int(s), "RolloutRSStat")
}

// k is the estimator of s: 1, 2 or 3.
func (s RolloutRSStat) k() int {
	switch s {
	case RSSeqMaxK2:
		return 2
	case RSSeqMaxK3:
		return 3
	}
	return (int(s)-1)%3 + 1
}

func (s RolloutRSStat) token() bool { return s >= RSTokenK1 && s <= RSTokenK3 }

// MaxRolloutRSKL is how many divergence rules Config.RolloutRSKL chains.
const MaxRolloutRSKL = 4

// RolloutRSRule is one of verl's divergence-based rejection rules: the
// tokens (token_*) or sequences (seq_*) whose statistic exceeds Upper are
// removed from the mask, and from every denominator. For the k1
// statistics Lower and Upper are ratio bounds, verl's "lower_upper": kept
// when log(Lower) ≤ k1 ≤ log(Upper), Lower 0 meaning 1/Upper; for k2 and k3
// Upper is the bound on the statistic and Lower must be 0.
type RolloutRSRule struct {
	Stat         RolloutRSStat
	Upper, Lower float64
}

// ParseRolloutRS reads verl's rollout_rs and rollout_rs_threshold (its
// string form: comma-separated options, one threshold shared by all or one
// per option, "lower_upper" for the k1 options) into Config.RolloutRSKL.
func ParseRolloutRS(options, thresholds string) ([MaxRolloutRSKL]RolloutRSRule, error) {
	var out [MaxRolloutRSKL]RolloutRSRule
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrRange, field, nil, format, a...))
	}
	var names []string
	for _, o := range strings.Split(options, ",") {
		if o = strings.TrimSpace(o); o != "" {
			names = append(names, o)
		}
	}
	var specs []string
	for _, s := range strings.Split(thresholds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			specs = append(specs, s)
		}
	}
	switch {
	case len(names) == 0:
		return out, bad("rollout_rs", "no option in %q", options)
	case len(names) > MaxRolloutRSKL:
		return out, bad("rollout_rs", "%d options, at most %d", len(names), MaxRolloutRSKL)
	case len(specs) != 1 && len(specs) != len(names):
		return out, bad("rollout_rs_threshold", "%d thresholds for %d options (want one, or one per option)", len(specs), len(names))
	}
	for i, n := range names {
		s, err := enum.Parse(rsStatNames[1:], n, "ppo", "rollout_rs")
		if err != nil {
			return out, err
		}
		r := RolloutRSRule{Stat: RolloutRSStat(s + 1)}
		spec := specs[0]
		if len(specs) > 1 {
			spec = specs[i]
		}
		lo, hi, two := strings.Cut(spec, "_")
		if !two {
			hi, lo = lo, ""
		}
		if r.Upper, err = strconv.ParseFloat(hi, 64); err != nil {
			return out, bad(fmt.Sprintf("rollout_rs_threshold[%d]", i), "%q is not a number", hi)
		}
		if two {
			if r.Stat.k() != 1 {
				return out, bad(fmt.Sprintf("rollout_rs_threshold[%d]", i), "%q: a lower bound is for the k1 options only, not %v", spec, r.Stat)
			}
			if r.Lower, err = strconv.ParseFloat(lo, 64); err != nil {
				return out, bad(fmt.Sprintf("rollout_rs_threshold[%d]", i), "%q is not a number", lo)
			}
		}
		out[i] = r
	}
	return out, nil
}

func (c Config) validateRolloutKL() error {
	bad := func(field, format string, a ...any) error {
		return tensor.Errorf(tensor.ErrRange, "Config."+field, nil, format, a...)
	}
	pos := func(v float64) bool { return v > 0 && !math.IsInf(v, 1) }
	switch {
	case c.RolloutISMode < RolloutISTruncate || c.RolloutISMode > RolloutISSeqMaskTIS:
		return bad("RolloutISMode", "%d is not a RolloutISMode", int(c.RolloutISMode))
	case c.RolloutISMode == RolloutISSeqMaskTIS && c.RolloutIS == RolloutSequence:
		return bad("RolloutISMode", "seq_mask_tis weighs tokens: want RolloutIS token, not sequence")
	case !(c.RolloutISThresholdLower >= 0) || math.IsInf(c.RolloutISThresholdLower, 1):
		return bad("RolloutISThresholdLower", "%v, want 0 (no lower bound) or a finite number > 0", c.RolloutISThresholdLower)
	case c.RolloutISThresholdLower > cmpOr(c.RolloutISThreshold, DefaultRolloutISThreshold):
		return bad("RolloutISThresholdLower", "%v is above RolloutISThreshold = %v", c.RolloutISThresholdLower, cmpOr(c.RolloutISThreshold, DefaultRolloutISThreshold))
	case !(c.RolloutOutlierLow >= 0) || math.IsInf(c.RolloutOutlierLow, 1):
		return bad("RolloutOutlierLow", "%v, want 0 (off) or a finite number > 0", c.RolloutOutlierLow)
	case !(c.RolloutOutlierHigh >= 0) || math.IsInf(c.RolloutOutlierHigh, 1):
		return bad("RolloutOutlierHigh", "%v, want 0 (off) or a finite number > 0", c.RolloutOutlierHigh)
	case c.RolloutOutlierHigh > 0 && c.RolloutOutlierLow > c.RolloutOutlierHigh:
		return bad("RolloutOutlierLow", "%v is above RolloutOutlierHigh = %v", c.RolloutOutlierLow, c.RolloutOutlierHigh)
	case c.RolloutISBatchNormalize && c.RolloutIS == RolloutOff:
		return bad("RolloutISBatchNormalize", "set without importance weights (RolloutIS off)")
	case c.KLUnbiased && (c.LossMode == GSPOToken || c.LossMode == GeoMean):
		return bad("KLUnbiased", "defined for token-level ratios and GSPO's sequence ratio, not loss mode %v", c.LossMode)
	}
	for i, r := range c.RolloutRSKL {
		// The field's name only on the error path: Validate allocates
		// nothing for a valid Config.
		f := func(sub string) string { return fmt.Sprintf("RolloutRSKL[%d]%s", i, sub) }
		switch {
		case r.Stat < RSOff || r.Stat > RSSeqMaxK3:
			return bad(f(".Stat"), "%d is not a RolloutRSStat", int(r.Stat))
		case r.Stat == RSOff && r != RolloutRSRule{}:
			return bad(f(""), "bounds %v, %v on an unused slot", r.Upper, r.Lower)
		case r.Stat == RSOff:
		case !pos(r.Upper):
			return bad(f(".Upper"), "%v, want a finite number > 0 (verl requires it too)", r.Upper)
		case r.Stat.k() != 1 && r.Lower != 0:
			return bad(f(".Lower"), "%v: a lower bound is for the k1 statistics only, not %v", r.Lower, r.Stat)
		case !(r.Lower >= 0) || r.Lower > r.Upper:
			return bad(f(".Lower"), "%v, want 0 (1/Upper) or a number in (0, Upper]", r.Lower)
		}
	}
	return nil
}

// rolloutKL reports whether any divergence rule is set.
func (c *Config) rolloutKL() bool { return c.RolloutRSKL != [MaxRolloutRSKL]RolloutRSRule{} }

// rolloutExtra reports whether the call uses a correction the assembly
// kernel of the rollout pass does not know.
func (c *Config) rolloutExtra() bool {
	return c.RolloutISMode != RolloutISTruncate || c.RolloutISThresholdLower > 0 || c.RolloutISBatchNormalize ||
		c.rolloutKL() || c.RolloutOutlierLow > 0 || c.RolloutOutlierHigh > 0
}

// klRule is a divergence rule with its bounds in the statistic's space.
type klRule struct {
	stat    RolloutRSStat
	lo, hi  float64
	on, tok bool
	k       int
}

// rsKLRules resolves Config.RolloutRSKL: k1 bounds to log space.
func (c *Config) rsKLRules() (out [MaxRolloutRSKL]klRule) {
	for i, r := range c.RolloutRSKL {
		if r.Stat == RSOff {
			continue
		}
		k := klRule{stat: r.Stat, on: true, tok: r.Stat.token(), k: r.Stat.k(), lo: math.Inf(-1), hi: r.Upper}
		if k.k == 1 {
			lower := r.Lower
			if lower == 0 {
				lower = 1 / r.Upper
			}
			k.lo, k.hi = math.Log(lower), math.Log(r.Upper)
		}
		out[i] = k
	}
	return out
}

// keep reports whether a statistic passes the rule (inclusive bounds, as
// verl's).
func (k *klRule) keep(v float64) bool { return v >= k.lo && v <= k.hi }

// klStats are the three divergence statistics of a clamped log-ratio lc
// with e = exp(lc).
func klStats(lc, e float64) (k1, k2, k3 float64) { return -lc, 0.5 * lc * lc, e - 1 - lc }

// tokenKLKeep reports whether a token passes every token-level rule.
func (p *rolloutBounds) tokenKLKeep(lc, e float64) bool {
	k1, k2, k3 := klStats(lc, e)
	st := [4]float64{0, k1, k2, k3}
	for i := range p.kl {
		r := &p.kl[i]
		if r.on && r.tok && !r.keep(st[r.k]) {
			return false
		}
	}
	return true
}

// seqKLKeep reports whether a row passes every sequence-level rule, from
// its sums and maxima over n valid tokens.
func (p *rolloutBounds) seqKLKeep(acc *rolloutAcc) bool {
	n := float64(acc.n)
	sum := [4]float64{0, -acc.lcSum, acc.k2Sum, acc.k3}
	mx := [4]float64{0, 0, acc.k2Max, acc.k3Max}
	for i := range p.kl {
		r := &p.kl[i]
		if !r.on || r.tok {
			continue
		}
		var v float64
		switch {
		case r.stat >= RSSeqSumK1 && r.stat <= RSSeqSumK3:
			v = sum[r.k]
		case r.stat >= RSSeqMeanK1 && r.stat <= RSSeqMeanK3:
			v = sum[r.k] / n
		default:
			v = mx[r.k]
		}
		if !r.keep(v) {
			return false
		}
	}
	return true
}

// isWeight bounds an importance weight e by the mode: truncated to [isMin,
// isMax], masked to 0 outside it, or left as it is (seq_mask_tis). It
// reports whether the mask zeroed it.
func (p *rolloutBounds) isWeight(e float64) (float64, bool) {
	switch p.isMode {
	case RolloutISMask:
		if e < p.isMin || e > p.isMax {
			return 0, true
		}
		return e, false
	case RolloutISSeqMaskTIS:
		return e, false
	}
	return min(max(e, p.isMin), p.isMax), false
}

// outlier reports whether a token's weight e lies outside SkyRL's outlier
// bounds (each off at 0), which masks its whole sequence.
func (p *rolloutBounds) outlier(e float64) bool {
	return e > p.outHigh || e < p.outLow
}

// normalizeIS divides the importance weights by their mean (verl
// rollout_is_batch_normalize): over the call's valid tokens at the token
// level, over its sequences with a valid token at the sequence level, both
// before rejection. A mean ≤ 10⁻⁸ leaves them as they are, as verl does. It
// returns the factor.
func (j *policyJob[F]) normalizeIS() float64 {
	var sum float64
	var count int
	for b := range j.rcRows {
		acc := &j.rcRows[b]
		if acc.n == 0 {
			continue
		}
		if j.cfg.RolloutIS == RolloutSequence {
			sum += acc.isSum / float64(acc.n)
			count++
		} else {
			sum += acc.isSum
			count += acc.n
		}
	}
	if count == 0 {
		return 1
	}
	mean := sum / float64(count)
	if !(mean > 1e-8) {
		return 1
	}
	for b := range j.rcRows {
		start, n := j.in.Logp.Span(b)
		mask, etw := j.in.Mask.Data[start:start+n], j.rcTW[start:start+n]
		for t, m := range mask {
			if m == 1 {
				etw[t] = F(float64(etw[t]) / mean)
			}
		}
	}
	return mean
}

// klIS returns the IS-corrected ("unbiased") KL term of DeepSeek-V3.2
// (arXiv 2512.02556, §3.1; TRL use_bias_correction_kl): the estimate k
// times the ratio ρ = π_θ/π_old, with the product rule's gradient
// ρ·(dk + k·[ρ live]), ρ a function of logp.
func (r *rules) klIS(k, dk, rho float64, live bool) (float64, float64) {
	g := dk
	if live {
		g += k
	}
	return rho * k, rho * g
}

// unbiasedKL applies klIS at a token: ρ is the policy term's ratio r (live
// where its clamp passes the gradient) unless a proximal policy makes that
// ratio's base differ from old_logp, when it is recomputed against old_logp.
func (j *policyJob[F]) unbiasedKL(k, dk, logp, old, r float64, live, prox bool) (float64, float64) {
	if prox {
		var d float64
		d, live = j.rules.logRatio(logp - old)
		r = j.exp(d)
	}
	return j.rules.klIS(k, dk, r, live)
}
