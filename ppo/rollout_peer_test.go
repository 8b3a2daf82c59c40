package ppo_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// peerConfigs are the two-sided rollout corrections and the IS-corrected
// KL, each with a check that the case exercises it.
func peerConfigs() map[string]struct {
	set   func(*ppo.Config)
	fired func(ppo.Result) bool
} {
	masked := func(r ppo.Result) bool { return r.Rollout.ISMaskedFrac > 0 }
	rejected := func(r ppo.Result) bool { return r.Rollout.RSMaskedFrac > 0 && r.Rollout.RSMaskedFrac < 1 }
	always := func(ppo.Result) bool { return true }
	rs := func(opts, thr string) func(*ppo.Config) {
		return func(c *ppo.Config) {
			var err error
			if c.RolloutRSKL, err = ppo.ParseRolloutRS(opts, thr); err != nil {
				panic(err)
			}
		}
	}
	type entry = struct {
		set   func(*ppo.Config)
		fired func(ppo.Result) bool
	}
	return map[string]entry{
		"icepop token": {func(c *ppo.Config) {
			c.RolloutIS, c.RolloutISMode, c.RolloutISThreshold, c.RolloutISThresholdLower = ppo.RolloutToken, ppo.RolloutISMask, 1.2, 0.8
		}, masked},
		"mis sequence": {func(c *ppo.Config) {
			c.RolloutIS, c.RolloutISMode, c.RolloutISThreshold = ppo.RolloutSequence, ppo.RolloutISMask, 1.5
		}, masked},
		"tis lower bound": {func(c *ppo.Config) {
			c.RolloutIS, c.RolloutISThreshold, c.RolloutISThresholdLower = ppo.RolloutToken, 1.2, 0.9
		}, func(r ppo.Result) bool { return r.Rollout.ISTruncatedFrac > 0 }},
		"seq-mask-tis": {func(c *ppo.Config) {
			c.RolloutIS, c.RolloutISMode, c.RolloutISThreshold, c.RolloutISThresholdLower = ppo.RolloutToken, ppo.RolloutISSeqMaskTIS, 1.05, 0.95
		}, masked},
		"batch-normalised token": {func(c *ppo.Config) {
			c.RolloutIS, c.RolloutISBatchNormalize = ppo.RolloutToken, true
		}, func(r ppo.Result) bool { return r.Rollout.ISBatchNormFactor != 1 }},
		"batch-normalised sequence": {func(c *ppo.Config) {
			c.RolloutIS, c.RolloutISBatchNormalize = ppo.RolloutSequence, true
		}, func(r ppo.Result) bool { return r.Rollout.ISBatchNormFactor != 1 }},
		"rs token_k2":               {rs("token_k2", "0.01"), rejected},
		"rs token_k1,seq_max_k2":    {rs("token_k1,seq_max_k2", "0.8_1.3,1"), rejected},
		"rs seq_mean_k3,seq_sum_k1": {rs("seq_mean_k3,seq_sum_k1", "0.05,0.5_4"), rejected},
		"outlier tokens": {func(c *ppo.Config) { c.RolloutOutlierLow, c.RolloutOutlierHigh = 0.5, 2 },
			func(r ppo.Result) bool {
				return r.Rollout.OutlierSeqMaskedFrac > 0 && r.Rollout.OutlierSeqMaskedFrac < 1
			}},
		"unbiased kl k3":       {func(c *ppo.Config) { c.KLUnbiased = true }, always},
		"unbiased kl k3 clamp": {func(c *ppo.Config) { c.KLUnbiased, c.KLClamp, c.LogRatioClamp = true, 0.2, 0.25 }, always},
		// k3+ and CISPO carry stop-gradients (their gradient is not their
		// value's): the torch vectors check them, not finite differences.
		"unbiased kl k1 gpg": {func(c *ppo.Config) {
			c.KLUnbiased, c.KLEstimator, c.LossMode = true, ppo.K1, ppo.GPG
		}, always},
		"unbiased kl k2 sapo": {func(c *ppo.Config) { c.KLUnbiased, c.KLEstimator, c.LossMode = true, ppo.K2, ppo.SAPO }, always},
	}
}

// TestRolloutPeerGradients checks each correction's gradient by central
// differences in float64 at three aggregations: the weights and
// rejections are constants of logp, the IS-corrected KL takes the product
// rule.
func TestRolloutPeerGradients(t *testing.T) {
	const h = 1e-6
	for name, pc := range peerConfigs() {
		for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.TokenSum} {
			for _, prox := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/prox=%v", name, agg, prox), func(t *testing.T) {
					in := withRollout(randomInputs(batchSpec{b: 6, t: 9, ref: true, prox: prox, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 131}), 0.3, true, 7)
					cfg := ppo.DefaultConfig()
					cfg.Mode, cfg.KLCoef = agg, 0.3
					pc.set(&cfg)
					plain := ppo.DefaultConfig()
					plain.Mode, plain.KLCoef = agg, 0.3
					grad := make([]float64, in.Logp.Size())
					res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
					require.NoError(t, err)
					assert.True(t, pc.fired(res), "the case does not exercise the correction: %+v", res.Rollout)
					assert.NotEqual(t, lossAt(t, in, plain), res.Loss, "the correction changes nothing")
					for k := range grad {
						q := clone(in)
						q.RolloutLogp = in.RolloutLogp
						q.Logp.Data[k] += h
						up := lossAt(t, q, cfg)
						q.Logp.Data[k] -= 2 * h
						fd := (up - lossAt(t, q, cfg)) / (2 * h)
						assert.Truef(t, relClose(grad[k], fd, 1e-5, 1e-8), "[%d,%d]: grad %.10g, fd %.10g", k/in.Logp.T, k%in.Logp.T, grad[k], fd)
					}
				})
			}
		}
	}
}

// TestRolloutPeerByHand: one row, two tokens, A = 1, r = 1, ℓ = old −
// rollout = (ln 3, 0), so the weights are (3, 1) before any bound.
func TestRolloutPeerByHand(t *testing.T) {
	mk := func(v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](1, len(v))
		copy(b.Data, v)
		return b
	}
	l3 := math.Log(3)
	in := ppo.Inputs[float64]{Logp: mk(-1, -2), OldLogp: mk(-1, -2), Advantages: mk(1, 1), Mask: mk(1, 1),
		RolloutLogp: mk(-1-l3, -2)}
	run := func(set func(*ppo.Config)) (ppo.Result, []float64) {
		cfg := ppo.DefaultConfig()
		set(&cfg)
		g := make([]float64, 2)
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		return res, g
	}
	// IcePop at [½, 2]: the weights (0, 1), both tokens in the denominator
	// (rollout_rs token would give −1/1).
	res, g := run(func(c *ppo.Config) { c.RolloutIS, c.RolloutISMode = ppo.RolloutToken, ppo.RolloutISMask })
	assert.InDelta(t, -0.5, res.Loss, 1e-15)
	assert.InDeltaSlice(t, []float64{0, -0.5}, g, 1e-15)
	assert.Equal(t, 2, res.Tokens)
	assert.Equal(t, 0.5, res.Rollout.ISMaskedFrac)
	// TIS at [1.5, 2]: (2, 1.5).
	res, _ = run(func(c *ppo.Config) { c.RolloutIS, c.RolloutISThresholdLower = ppo.RolloutToken, 1.5 })
	assert.InDelta(t, -1.75, res.Loss, 1e-15)
	// seq-mask-tis: the geometric mean √3 is inside [½, 2], so the raw
	// weights (3, 1) stay; inside [½, 1.5] it is not, and both become 0.
	res, _ = run(func(c *ppo.Config) { c.RolloutIS, c.RolloutISMode = ppo.RolloutToken, ppo.RolloutISSeqMaskTIS })
	assert.InDelta(t, -2.0, res.Loss, 1e-15)
	res, g = run(func(c *ppo.Config) {
		c.RolloutIS, c.RolloutISMode, c.RolloutISThreshold = ppo.RolloutToken, ppo.RolloutISSeqMaskTIS, 1.5
	})
	assert.Equal(t, 0.0, res.Loss)
	assert.Equal(t, []float64{0, 0}, g)
	assert.Equal(t, 2, res.Tokens)
	// Batch normalisation: (2, 1) over their mean 1.5.
	res, g = run(func(c *ppo.Config) { c.RolloutIS, c.RolloutISBatchNormalize = ppo.RolloutToken, true })
	assert.InDelta(t, -1.0, res.Loss, 1e-15)
	assert.InDeltaSlice(t, []float64{-2.0 / 3, -1.0 / 3}, g, 1e-15)
	assert.Equal(t, 1.5, res.Rollout.ISBatchNormFactor)
	// token_k1 at "0.5_2": k1 = −ℓ = −ln 3 < ln ½ rejects the first token.
	res, g = run(func(c *ppo.Config) { c.RolloutRSKL[0] = ppo.RolloutRSRule{Stat: ppo.RSTokenK1, Upper: 2, Lower: 0.5} })
	assert.InDelta(t, -1.0, res.Loss, 1e-15)
	assert.InDeltaSlice(t, []float64{0, -1}, g, 1e-15)
	// seq_mean_k2: (ln 3)²/4 ≈ 0.3017 passes 0.31 and fails 0.30.
	res, _ = run(func(c *ppo.Config) { c.RolloutRSKL[0] = ppo.RolloutRSRule{Stat: ppo.RSSeqMeanK2, Upper: 0.31} })
	assert.InDelta(t, -1.0, res.Loss, 1e-15)
	res, _ = run(func(c *ppo.Config) { c.RolloutRSKL[0] = ppo.RolloutRSRule{Stat: ppo.RSSeqMeanK2, Upper: 0.30} })
	assert.Equal(t, 0.0, res.Loss)
	assert.Equal(t, 0, res.Tokens)
	// SkyRL's outlier mask: the weight 3 > 2 removes the sequence.
	res, _ = run(func(c *ppo.Config) { c.RolloutOutlierHigh = 2 })
	assert.Equal(t, 0, res.Tokens)
	assert.Equal(t, 1.0, res.Rollout.OutlierSeqMaskedFrac)

	// The IS-corrected KL: r = π_θ/π_old = 2, k1 = logp − ref = ½, A = 0:
	// the loss β·r·k = 1 and its gradient β·r·(1 + k) = 3, where the
	// plain k1 gives ½ and 1.
	kin := ppo.Inputs[float64]{Logp: mk(-1), OldLogp: mk(-1 - math.Ln2), Advantages: mk(0), Mask: mk(1), RefLogp: mk(-1.5)}
	for _, c := range []struct {
		unbiased   bool
		loss, grad float64
	}{{false, 0.5, 1}, {true, 1, 3}} {
		cfg := ppo.DefaultConfig()
		cfg.KLCoef, cfg.KLEstimator, cfg.KLUnbiased = 1, ppo.K1, c.unbiased
		g := make([]float64, 1)
		res, err := ppo.PolicyLoss(gradBatch(g, kin), kin, cfg)
		require.NoError(t, err)
		assert.InDelta(t, c.loss, res.Loss, 1e-15)
		assert.InDelta(t, c.grad, g[0], 1e-15)
	}
}

func TestParseRolloutRS(t *testing.T) {
	rules, err := ppo.ParseRolloutRS("token_k1, seq_mean_k3", "0.5_2.0,0.01")
	require.NoError(t, err)
	assert.Equal(t, ppo.RolloutRSRule{Stat: ppo.RSTokenK1, Upper: 2, Lower: 0.5}, rules[0])
	assert.Equal(t, ppo.RolloutRSRule{Stat: ppo.RSSeqMeanK3, Upper: 0.01}, rules[1])
	assert.Equal(t, ppo.RolloutRSRule{}, rules[2])
	rules, err = ppo.ParseRolloutRS("seq_max_k2,seq_sum_k1", "3")
	require.NoError(t, err)
	assert.Equal(t, 3.0, rules[0].Upper)
	assert.Equal(t, 3.0, rules[1].Upper)
	for _, c := range [][2]string{
		{"token_k4", "1"}, {"seq_max_k1", "1"}, {"geometric", "2"}, {"", "1"}, {"token_k2", "0.1_0.2"},
		{"token_k2,token_k3,seq_sum_k2", "1,2"}, {"token_k2", "x"}, {"token_k1", "y_2"},
		{"token_k1,token_k2,token_k3,seq_sum_k1,seq_sum_k2", "1"},
	} {
		_, err := ppo.ParseRolloutRS(c[0], c[1])
		assert.ErrorIs(t, err, tensor.ErrRange, "%q %q", c[0], c[1])
	}
}

// TestRolloutPeerValidation: every new field rejects a value out of its
// domain with ErrRange, naming the field.
func TestRolloutPeerValidation(t *testing.T) {
	for field, set := range map[string]func(*ppo.Config){
		"RolloutISMode":           func(c *ppo.Config) { c.RolloutISMode = 7 },
		"RolloutISThresholdLower": func(c *ppo.Config) { c.RolloutISThresholdLower = 3 },
		"RolloutISBatchNormalize": func(c *ppo.Config) { c.RolloutISBatchNormalize = true },
		"RolloutOutlierHigh":      func(c *ppo.Config) { c.RolloutOutlierHigh = math.Inf(1) },
		"RolloutOutlierLow":       func(c *ppo.Config) { c.RolloutOutlierLow, c.RolloutOutlierHigh = 3, 2 },
		"RolloutRSKL[1].Upper":    func(c *ppo.Config) { c.RolloutRSKL[1] = ppo.RolloutRSRule{Stat: ppo.RSTokenK2} },
		"RolloutRSKL[0].Lower":    func(c *ppo.Config) { c.RolloutRSKL[0] = ppo.RolloutRSRule{Stat: ppo.RSSeqSumK3, Upper: 1, Lower: 0.5} },
		"RolloutRSKL[2]":          func(c *ppo.Config) { c.RolloutRSKL[2] = ppo.RolloutRSRule{Upper: 1} },
		"RolloutRSKL[3].Stat":     func(c *ppo.Config) { c.RolloutRSKL[3] = ppo.RolloutRSRule{Stat: 99, Upper: 1} },
		"KLUnbiased":              func(c *ppo.Config) { c.KLUnbiased, c.LossMode = true, ppo.GeoMean },
	} {
		cfg := ppo.DefaultConfig()
		set(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, tensor.ErrRange, field)
		assert.ErrorContains(t, err, "Config."+field)
	}
	cfg := ppo.DefaultConfig()
	cfg.RolloutIS, cfg.RolloutISMode = ppo.RolloutSequence, ppo.RolloutISSeqMaskTIS
	assert.ErrorIs(t, cfg.Validate(), tensor.ErrRange)
	// The divergence rules need rollout log-probs.
	in := randomInputs(batchSpec{b: 2, t: 3, spread: 0.1, seed: 9})
	cfg = ppo.DefaultConfig()
	cfg.RolloutRSKL[0] = ppo.RolloutRSRule{Stat: ppo.RSTokenK3, Upper: 1}
	_, err := ppo.PolicyLoss(gradBatch(make([]float64, 6), in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrShape)
}

// TestRolloutPeerAllocatesNothing: the new corrections reuse the job's
// scratch in float32 and float64.
func TestRolloutPeerAllocatesNothing(t *testing.T) {
	in := withRollout(randomInputs(batchSpec{b: 8, t: 61, ref: true, spread: 0.3, seed: 114}), 0.2, true, 4)
	in32 := to32(in)
	for name, pc := range peerConfigs() {
		cfg := ppo.DefaultConfig()
		cfg.KLCoef = 0.01
		pc.set(&cfg)
		grad, grad32 := make([]float64, in.Logp.Size()), make([]float32, in.Logp.Size())
		allocs := testing.AllocsPerRun(10, func() {
			if _, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg); err != nil {
				t.Fatal(err)
			}
			if _, err := ppo.PolicyLoss(gradBatch(grad32, in32), in32, cfg); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, name)
	}
}

// TestUnbiasedKLSequenceGradients: at the sequence level the KL term is
// s·Σk with s = exp(mean Δ), a function of every logp of the row: central
// differences for GSPO and RatioLevel sequence; proximal log-probs are an
// error there.
func TestUnbiasedKLSequenceGradients(t *testing.T) {
	const h = 1e-6
	for name, set := range map[string]func(*ppo.Config){
		"gspo":           func(c *ppo.Config) { c.LossMode = ppo.GSPO },
		"ratio sequence": func(c *ppo.Config) { c.RatioLevel = ppo.SequenceRatio },
	} {
		for _, est := range []ppo.KLEstimator{ppo.K1, ppo.K3} {
			t.Run(fmt.Sprintf("%s/%v", name, est), func(t *testing.T) {
				in := randomInputs(batchSpec{b: 5, t: 7, ref: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 191})
				cfg := ppo.DefaultConfig()
				cfg.KLCoef, cfg.KLEstimator, cfg.KLUnbiased, cfg.Mode = 0.5, est, true, ppo.SeqMeanTokenMean
				set(&cfg)
				grad := make([]float64, in.Logp.Size())
				_, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
				require.NoError(t, err)
				plain := cfg
				plain.KLUnbiased = false
				assert.NotEqual(t, lossAt(t, in, plain), lossAt(t, in, cfg))
				for k := range grad {
					q := clone(in)
					q.Logp.Data[k] += h
					up := lossAt(t, q, cfg)
					q.Logp.Data[k] -= 2 * h
					fd := (up - lossAt(t, q, cfg)) / (2 * h)
					assert.Truef(t, relClose(grad[k], fd, 1e-5, 1e-8), "[%d]: grad %.10g, fd %.10g", k, grad[k], fd)
				}
				p := randomInputs(batchSpec{b: 2, t: 3, ref: true, prox: true, spread: 0.3, seed: 192})
				_, err = ppo.PolicyLoss(gradBatch(make([]float64, 6), p), p, cfg)
				assert.ErrorIs(t, err, tensor.ErrShape)
			})
		}
	}
}
