package ppo_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// gradCases cover every branch of the loss: clip bounds, dual clip, the
// log-ratio and KL clamps, decoupled weights in both cap modes, GSPO, token
// weights, the three KL estimators and the five aggregations, on batches
// with non-prefix masks and an empty row.
func gradCases() []struct {
	name string
	spec batchSpec
	cfg  ppo.Config
} {
	base := ppo.DefaultConfig()
	with := func(f func(*ppo.Config)) ppo.Config { c := base; f(&c); return c }
	return []struct {
		name string
		spec batchSpec
		cfg  ppo.Config
	}{
		{"token-mean/dual/k3/weights", batchSpec{b: 5, t: 9, ref: true, weights: true, spread: 0.4, nonPrefix: true, emptyRow: true, seed: 1},
			with(func(c *ppo.Config) { c.ClipHigh, c.DualClip, c.KLCoef, c.KLEstimator = 0.28, 1.5, 0.05, ppo.K3 })},
		{"seq-mean-token-mean/k2", batchSpec{b: 4, t: 11, ref: true, spread: 0.3, nonPrefix: true, seed: 2},
			with(func(c *ppo.Config) {
				c.Mode, c.DualClip, c.KLCoef, c.KLEstimator = ppo.SeqMeanTokenMean, 3, 0.1, ppo.K2
			})},
		{"seq-mean-token-sum/k1", batchSpec{b: 4, t: 7, ref: true, spread: 0.3, emptyRow: true, seed: 3},
			with(func(c *ppo.Config) { c.Mode, c.KLCoef, c.KLEstimator = ppo.SeqMeanTokenSum, 0.2, ppo.K1 })},
		{"sum-norm/decoupled-truncate", batchSpec{b: 4, t: 8, prox: true, spread: 0.5, nonPrefix: true, seed: 4},
			with(func(c *ppo.Config) { c.Mode, c.Norm, c.BehaveCap = ppo.SeqMeanTokenSumNorm, 7, 1.3 })},
		{"token-sum/decoupled-mask/weights", batchSpec{b: 3, t: 10, prox: true, weights: true, spread: 0.9, seed: 5},
			with(func(c *ppo.Config) { c.Mode, c.BehaveCap, c.BehaveCapMode = ppo.TokenSum, 1.2, ppo.CapMask })},
		{"decoupled-uncapped/k3-clamped", batchSpec{b: 3, t: 9, prox: true, ref: true, spread: 0.4, seed: 6},
			with(func(c *ppo.Config) { c.BehaveCap, c.KLCoef, c.KLClamp = 0, 0.3, 0.05 })},
		{"logratio-clamp-binds", batchSpec{b: 4, t: 9, spread: 0.6, nonPrefix: true, seed: 7},
			with(func(c *ppo.Config) { c.LogRatioClamp = 0.25; c.ClipLow, c.ClipHigh = 0.9, 5 })},
		{"gspo/token-mean/weights/k3", batchSpec{b: 5, t: 8, prox: true, ref: true, weights: true, spread: 0.2, nonPrefix: true, emptyRow: true, seed: 8},
			with(func(c *ppo.Config) {
				c.RatioLevel, c.KLCoef, c.BehaveCap, c.ClipLow, c.ClipHigh = ppo.SequenceRatio, 0.05, 1.1, 0.03, 0.03
			})},
		{"gspo/seq-mean-token-mean/dual", batchSpec{b: 6, t: 7, spread: 0.35, seed: 9},
			with(func(c *ppo.Config) {
				c.RatioLevel, c.Mode, c.DualClip, c.ClipLow, c.ClipHigh = ppo.SequenceRatio, ppo.SeqMeanTokenMean, 1.05, 0.02, 0.02
			})},
		{"gspo/clamp-binds", batchSpec{b: 4, t: 6, spread: 0.8, seed: 10},
			with(func(c *ppo.Config) { c.RatioLevel, c.LogRatioClamp = ppo.SequenceRatio, 0.1 })},
	}
}

// lossAt is the float64 loss of in under cfg.
func lossAt(t *testing.T, in ppo.Inputs[float64], cfg ppo.Config) float64 {
	t.Helper()
	grad := make([]float64, in.Logp.Size())
	res, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res.Loss
}

// TestPolicyGradientMatchesFiniteDifferences checks dLoss/dlogp against
// central differences of the float64 loss at every position.
func TestPolicyGradientMatchesFiniteDifferences(t *testing.T) {
	const h = 1e-6
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			in := randomInputs(c.spec)
			grad := make([]float64, in.Logp.Size())
			res, err := ppo.PolicyLoss(like(grad, in.Logp), in, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			clampCase := strings.HasSuffix(c.name, "clamp-binds")
			if !clampCase && res.ClipFracHigh+res.ClipFracLow+res.DualClipFrac == 0 {
				t.Error("no clip bound active anywhere: the case does not exercise clipping")
			}
			if c.cfg.BehaveCap > 0 && !in.ProxLogp.IsZero() && res.CappedFrac == 0 {
				t.Error("no behaviour weight capped: the case does not exercise the cap")
			}
			zeroGrads := 0
			for k := range grad {
				if in.Mask.Data[k] == 0 {
					if grad[k] != 0 {
						t.Fatalf("grad at masked position %d = %v, want 0", k, grad[k])
					}
					continue
				}
				if grad[k] == 0 {
					zeroGrads++
				}
				p := clone(in)
				p.Logp.Data[k] += h
				up := lossAt(t, p, c.cfg)
				p.Logp.Data[k] -= 2 * h
				down := lossAt(t, p, c.cfg)
				fd := (up - down) / (2 * h)
				if !relClose(grad[k], fd, 1e-5, 1e-8) {
					t.Errorf("position [%d,%d]: grad %.10g, finite difference %.10g", k/in.Logp.T, k%in.Logp.T, grad[k], fd)
				}
			}
			if clampCase && zeroGrads == 0 {
				t.Error("the log-ratio clamp never binds: the case does not exercise it")
			}
			t.Logf("%d valid positions with zero gradient", zeroGrads)
		})
	}
}

// TestValueGradientMatchesFiniteDifferences does the same for the critic.
func TestValueGradientMatchesFiniteDifferences(t *testing.T) {
	const h = 1e-6
	for _, mode := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum} {
		for _, clip := range []float64{0, 0.2} {
			t.Run(fmt.Sprintf("%v/clip=%v", mode, clip), func(t *testing.T) {
				pi := randomInputs(batchSpec{b: 4, t: 8, spread: 0.5, nonPrefix: true, emptyRow: true, seed: 11})
				in := ppo.ValueInputs[float64]{Values: pi.Logp, OldValues: pi.OldLogp, Returns: pi.ProxLogp, Mask: pi.Mask}
				in.Returns = tensor.MustNew[float64](4, 8)
				for i := range in.Returns.Data {
					in.Returns.Data[i] = pi.Logp.Data[i] + pi.Advantages.Data[i]
				}
				cfg := ppo.ValueConfig{Clip: clip, Reduction: ppo.Reduction{Mode: mode}}
				loss := func(v []float64) float64 {
					x := in
					x.Values = tensor.Batch[float64]{Shape: in.Values.Shape, Data: v}
					g := make([]float64, len(v))
					res, err := ppo.ValueLoss(like(g, x.Values), x, cfg)
					if err != nil {
						t.Fatal(err)
					}
					return res.Loss
				}
				grad := make([]float64, in.Values.Size())
				if _, err := ppo.ValueLoss(like(grad, in.Values), in, cfg); err != nil {
					t.Fatal(err)
				}
				for k := range grad {
					v := append([]float64(nil), in.Values.Data...)
					v[k] += h
					up := loss(v)
					v[k] -= 2 * h
					fd := (up - loss(v)) / (2 * h)
					if !relClose(grad[k], fd, 1e-5, 1e-8) {
						t.Errorf("position %d: grad %.10g, finite difference %.10g", k, grad[k], fd)
					}
				}
			})
		}
	}
}

// TestMicroBatchesAddUp is gradient accumulation: the batch cut into
// micro-batches, each given the whole batch's token (or sequence) count,
// yields losses that sum to the whole batch's loss and the same gradient.
func TestMicroBatchesAddUp(t *testing.T) {
	in := randomInputs(batchSpec{b: 7, t: 12, ref: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 21})
	cuts := []int{0, 2, 3, 7}
	for _, mode := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum} {
		for _, level := range []ppo.RatioLevel{ppo.TokenRatio, ppo.SequenceRatio} {
			t.Run(fmt.Sprintf("%v/%v", mode, level), func(t *testing.T) {
				cfg := ppo.DefaultConfig()
				cfg.Mode, cfg.RatioLevel, cfg.KLCoef, cfg.DualClip = mode, level, 0.02, 2
				whole := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(like(whole, in.Logp), in, cfg)
				if err != nil {
					t.Fatal(err)
				}
				cfg.TokenCount, cfg.SeqCount = float64(res.Tokens), float64(res.Sequences)
				var sum float64
				parts := make([]float64, in.Logp.Size())
				for i := 0; i+1 < len(cuts); i++ {
					lo, hi := cuts[i], cuts[i+1]
					sub := sliceInputs(in, lo, hi)
					mr, err := ppo.PolicyLoss(like(parts[lo*in.Logp.T:hi*in.Logp.T], sub.Logp), sub, cfg)
					if err != nil {
						t.Fatal(err)
					}
					sum += mr.Loss
				}
				if !relClose(sum, res.Loss, 1e-12, 1e-15) {
					t.Errorf("micro-batch losses sum to %.15g, whole batch %.15g", sum, res.Loss)
				}
				for k := range whole {
					if !relClose(parts[k], whole[k], 1e-12, 1e-15) {
						t.Fatalf("grad[%d]: micro-batches %.15g, whole batch %.15g", k, parts[k], whole[k])
					}
				}
			})
		}
	}
}
