package ppo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// TestPromptMeanByHand: two prompts of two rows, r = 1 so each token's loss
// is −A. Prompt 0 holds 3 tokens with A = 1 (mean 1), prompt 1 four tokens
// summing to 1 (mean ¼): prompt-mean is −(1 + ¼)/2, a token of prompt 0
// has gradient −A/(2·3). Taking prompt 1's advantages to 0 and dropping
// zero-variance groups, token-mean divides by 3 instead of 7.
func TestPromptMeanByHand(t *testing.T) {
	mk := func(rows ...[]float64) tensor.Batch[float64] {
		b, err := tensor.FromRows[float64](rows)
		require.NoError(t, err)
		return b
	}
	lp := mk([]float64{-1, -1}, []float64{-1, -1}, []float64{-1, -1}, []float64{-1, -1})
	in := ppo.Inputs[float64]{Logp: lp, OldLogp: lp,
		Advantages: mk([]float64{1, 0}, []float64{1, 1}, []float64{0.5, 0.5}, []float64{-1, 1}),
		Mask:       mk([]float64{1, 0}, []float64{1, 1}, []float64{1, 1}, []float64{1, 1})}
	run := func(set func(*ppo.Config), in ppo.Inputs[float64]) (ppo.Result, []float64) {
		cfg := ppo.DefaultConfig()
		set(&cfg)
		g := make([]float64, 8)
		res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
		require.NoError(t, err)
		return res, g
	}
	res, g := run(func(c *ppo.Config) { c.Mode, c.GroupSize = ppo.PromptMean, 2 }, in)
	assert.InDelta(t, -0.625, res.Loss, 1e-15)
	assert.InDelta(t, -1.0/6, g[0], 1e-15)
	assert.InDelta(t, -0.5/8, g[4], 1e-15)

	in.Advantages = mk([]float64{1, 0}, []float64{1, 1}, []float64{0, 0}, []float64{0, 0})
	res, _ = run(func(c *ppo.Config) { c.GroupSize = 2 }, in)
	assert.InDelta(t, -3.0/7, res.Loss, 1e-15)
	res, _ = run(func(c *ppo.Config) { c.GroupSize, c.DropZeroVariance = 2, true }, in)
	assert.InDelta(t, -1.0, res.Loss, 1e-15)
	assert.Equal(t, 3, res.Tokens)
	assert.Equal(t, 2, res.Sequences)

	for name, set := range map[string]func(*ppo.Config){
		"no group size":   func(c *ppo.Config) { c.Mode = ppo.PromptMean },
		"negative":        func(c *ppo.Config) { c.GroupSize = -1 },
		"with clip_cov":   func(c *ppo.Config) { c.LossMode, c.DropZeroVariance = ppo.ClipCov, true },
		"bad aggregation": func(c *ppo.Config) { c.Mode = ppo.PromptMean + 1 },
	} {
		cfg := ppo.DefaultConfig()
		set(&cfg)
		assert.ErrorIs(t, cfg.Validate(), tensor.ErrRange, name)
	}
	cfg := ppo.DefaultConfig()
	cfg.Mode, cfg.GroupSize = ppo.PromptMean, 3
	_, err := ppo.PolicyLoss(gradBatch(make([]float64, 8), in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrShape)
	m, err := ppo.ParseAggregation("prompt_mean")
	require.NoError(t, err)
	assert.Equal(t, ppo.PromptMean, m)
}

// TestPromptMeanGradients checks prompt-mean, and dropped zero-variance
// groups under three aggregations, by central differences.
func TestPromptMeanGradients(t *testing.T) {
	const h = 1e-6
	for _, c := range []struct {
		agg  ppo.Aggregation
		drop bool
	}{{ppo.PromptMean, false}, {ppo.PromptMean, true}, {ppo.TokenMean, true}, {ppo.SeqMeanTokenMean, true}} {
		t.Run(fmt.Sprintf("%v/drop=%v", c.agg, c.drop), func(t *testing.T) {
			in := randomInputs(batchSpec{b: 6, t: 9, ref: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 161})
			for i := 2 * 9; i < 4*9; i++ {
				in.Advantages.Data[i] = 0 // the second group of two has nothing to learn
			}
			cfg := ppo.DefaultConfig()
			cfg.Mode, cfg.KLCoef, cfg.GroupSize, cfg.DropZeroVariance = c.agg, 0.1, 2, c.drop
			grad := make([]float64, in.Logp.Size())
			res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
			require.NoError(t, err)
			if c.drop {
				assert.Equal(t, make([]float64, 18), grad[2*9:4*9], "a dropped group keeps no KL gradient")
				assert.Less(t, res.Sequences, 6)
			}
			for k := range grad {
				q := clone(in)
				q.Logp.Data[k] += h
				up := lossAt(t, q, cfg)
				q.Logp.Data[k] -= 2 * h
				fd := (up - lossAt(t, q, cfg)) / (2 * h)
				assert.Truef(t, relClose(grad[k], fd, 1e-5, 1e-8), "[%d]: grad %.10g, fd %.10g", k, grad[k], fd)
			}
		})
	}
}
