package ppo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/internal/tool/bench"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// withRollout adds rollout log-probs at most spread nats from old_logp,
// with one token of each row far off when far is set.
func withRollout(in ppo.Inputs[float64], spread float64, far bool, seed uint64) ppo.Inputs[float64] {
	rng := rand.New(rand.NewPCG(seed, 5))
	in.RolloutLogp = tensor.MustNew[float64](in.Logp.B, in.Logp.T)
	for i, o := range in.OldLogp.Data {
		in.RolloutLogp.Data[i] = o + spread*(2*rng.Float64()-1)
	}
	if far {
		for b := 1; b < in.Logp.B; b += 2 {
			in.RolloutLogp.Data[b*in.Logp.T+b%in.Logp.T] -= 3
		}
	}
	return in
}

func TestParseRolloutLevel(t *testing.T) {
	for name, want := range map[string]ppo.RolloutLevel{"": ppo.RolloutOff, "token": ppo.RolloutToken, "sequence": ppo.RolloutSequence, "geometric": ppo.RolloutGeometric} {
		got, err := ppo.ParseRolloutLevel(name)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ppo.ParseRolloutLevel("seq_mean_k1")
	assert.Error(t, err)
}

// rolloutConfigs are the corrections the tests run.
func rolloutConfigs() map[string]func(*ppo.Config) {
	return map[string]func(*ppo.Config){
		"metrics only": func(c *ppo.Config) {},
		"is token":     func(c *ppo.Config) { c.RolloutIS, c.RolloutISThreshold = ppo.RolloutToken, 1.1 },
		"is sequence":  func(c *ppo.Config) { c.RolloutIS, c.RolloutISThreshold = ppo.RolloutSequence, 1.5 },
		"rs token":     func(c *ppo.Config) { c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutToken, 1.2 },
		"rs sequence": func(c *ppo.Config) {
			c.RolloutRS, c.RolloutRSThreshold, c.RolloutRSThresholdLower = ppo.RolloutSequence, 2, 0.05
		},
		"rs geometric": func(c *ppo.Config) { c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutGeometric, 1.2 },
		"is token+rs geomean": func(c *ppo.Config) {
			c.RolloutIS, c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutToken, ppo.RolloutGeometric, 1.3
		},
		"off-policy mask": func(c *ppo.Config) { c.OffPolicySeqMaskKL = 0.001 },
	}
}

// TestRolloutGradients: the weights and rejections are constants of
// logp, so the gradient is the derivative of the corrected loss, checked by
// central differences for each correction, at each aggregation.
func TestRolloutGradients(t *testing.T) {
	const h = 1e-6
	for name, set := range rolloutConfigs() {
		for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.TokenSum} {
			t.Run(fmt.Sprintf("%s/%v", name, agg), func(t *testing.T) {
				in := withRollout(randomInputs(batchSpec{b: 6, t: 9, ref: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 111}), 0.3, true, 1)
				cfg := ppo.DefaultConfig()
				cfg.Mode, cfg.KLCoef = agg, 0.05
				set(&cfg)
				if cfg.OffPolicySeqMaskKL > 0 {
					for i, a := range in.Advantages.Data {
						in.Advantages.Data[i] = -math.Abs(a) // every row a candidate
					}
				}
				grad := make([]float64, in.Logp.Size())
				res, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg)
				require.NoError(t, err)
				if cfg.RolloutIS != ppo.RolloutOff {
					assert.NotZero(t, res.Rollout.ISTruncatedFrac, "no weight truncated: the case does not exercise it")
				}
				if cfg.OffPolicySeqMaskKL > 0 {
					assert.NotZero(t, res.Rollout.OffPolicyMaskedFrac, "no sequence masked: the case does not exercise it")
				}
				if cfg.RolloutRS != ppo.RolloutOff {
					assert.NotZero(t, res.Rollout.RSMaskedFrac, "nothing rejected: the case does not exercise it")
					assert.Less(t, res.Rollout.RSMaskedFrac, 1.0)
				}
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

// TestRolloutByHand: one row, two tokens with ℓ = old − rollout = (ln 3,
// 0). Token weights truncate at 2: (2, 1). The sequence weight e^{ln 3} = 3
// truncates to 2. Token rejection at [0.5, 2] drops the first token, and
// the token-mean denominator with it.
func TestRolloutByHand(t *testing.T) {
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
	res, g := run(func(c *ppo.Config) { c.RolloutIS = ppo.RolloutToken })
	assert.InDelta(t, -(2+1)/2.0, res.Loss, 1e-15) // r = 1: ℓ = −A·w
	assert.InDeltaSlice(t, []float64{-1, -0.5}, g, 1e-15)
	assert.Equal(t, 0.5, res.Rollout.ISTruncatedFrac)
	// verl's rollout_is_mean is taken before truncation: (3 + 1)/2, not
	// (2 + 1)/2.
	assert.InDelta(t, 2.0, res.Rollout.ISMean, 1e-15)
	assert.InDelta(t, -l3/2, res.Rollout.KL, 1e-15)
	assert.InDelta(t, (3-l3-1)/2, res.Rollout.K3KL, 1e-15)
	assert.InDelta(t, math.Exp(1.5), res.Rollout.TrainingPPL, 1e-12)
	assert.InDelta(t, math.Exp(1.5+l3/2), res.Rollout.RolloutPPL, 1e-12)
	assert.InDelta(t, math.Exp(-l3/2), res.Rollout.PPLRatio, 1e-15)

	res, g = run(func(c *ppo.Config) { c.RolloutIS = ppo.RolloutSequence })
	assert.InDelta(t, -2.0, res.Loss, 1e-15)
	assert.InDeltaSlice(t, []float64{-1, -1}, g, 1e-15)
	assert.Equal(t, 1.0, res.Rollout.ISTruncatedFrac)

	res, g = run(func(c *ppo.Config) { c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutToken, 2 })
	assert.InDelta(t, -1.0, res.Loss, 1e-15)
	assert.InDeltaSlice(t, []float64{0, -1}, g, 1e-15)
	assert.Equal(t, 1, res.Tokens)
	assert.Equal(t, 0.5, res.Rollout.RSMaskedFrac)
	assert.Equal(t, 1.0, res.Rollout.RSSeqMaskedFrac)

	// The geometric mean √3 ≈ 1.73 passes [0.5, 2]; the product 3 does not.
	res, _ = run(func(c *ppo.Config) { c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutGeometric, 2 })
	assert.Equal(t, 0.0, res.Rollout.RSMaskedFrac)
	res, g = run(func(c *ppo.Config) { c.RolloutRS, c.RolloutRSThreshold = ppo.RolloutSequence, 2 })
	assert.Equal(t, 1.0, res.Rollout.RSMaskedFrac)
	assert.Equal(t, 0.0, res.Loss)
	assert.Equal(t, []float64{0, 0}, g)
}

func TestRolloutRejects(t *testing.T) {
	in := randomInputs(batchSpec{b: 2, t: 5, spread: 0.2, seed: 112})
	cfg := ppo.DefaultConfig()
	cfg.RolloutIS = ppo.RolloutToken
	_, err := ppo.PolicyLoss(gradBatch(make([]float64, 10), in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrShape)
	in = withRollout(in, 0.1, false, 2)
	for i := range in.Mask.Data {
		in.Mask.Data[i] = 1
	}
	in.RolloutLogp.Data[6] = math.Inf(-1)
	_, err = ppo.PolicyLoss(gradBatch(make([]float64, 10), in), in, cfg)
	require.ErrorIs(t, err, tensor.ErrNonFinite)
	assert.Contains(t, err.Error(), "rollout_logp[1,1]")
	in.RolloutLogp.Data[6] = -1
	in.Mask.Data[3] = 0.5
	_, err = ppo.PolicyLoss(gradBatch(make([]float64, 10), in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrMask)
	for _, bad := range []func(*ppo.Config){
		func(c *ppo.Config) { c.RolloutRS = ppo.RolloutToken }, // no threshold
		func(c *ppo.Config) {
			c.RolloutRS, c.RolloutRSThreshold, c.RolloutRSThresholdLower = ppo.RolloutToken, 2, 3
		},
		func(c *ppo.Config) { c.RolloutIS = ppo.RolloutGeometric },
		func(c *ppo.Config) { c.RolloutIS, c.RolloutISThreshold = ppo.RolloutToken, -1 },
		func(c *ppo.Config) { c.RolloutIS, c.LossMode = ppo.RolloutToken, ppo.GeoMean },
	} {
		c := ppo.DefaultConfig()
		bad(&c)
		assert.ErrorIs(t, c.Validate(), tensor.ErrRange)
	}
}

// TestRolloutRejectsFloat32: float32 storage through the kernel, in a
// row's body and in its padded tail, names the same positions.
func TestRolloutRejectsFloat32(t *testing.T) {
	in := to32(withRollout(randomInputs(batchSpec{b: 2, t: 13, spread: 0.2, seed: 117}), 0.1, false, 7))
	for i := range in.Mask.Data {
		in.Mask.Data[i] = 1
	}
	cfg := ppo.DefaultConfig()
	cfg.RolloutIS = ppo.RolloutToken
	grad := make([]float32, in.Logp.Size())
	for _, col := range []int{3, 11} { // the kernel's body, its tail
		k := 13 + col
		in.RolloutLogp.Data[k] = float32(math.Inf(-1))
		_, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
		require.ErrorIs(t, err, tensor.ErrNonFinite)
		assert.Contains(t, err.Error(), fmt.Sprintf("rollout_logp[1,%d]", col))
		in.RolloutLogp.Data[k] = -1
		in.Mask.Data[k] = 0.5
		_, err = ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
		require.ErrorIs(t, err, tensor.ErrMask)
		assert.Contains(t, err.Error(), fmt.Sprintf("mask[1,%d]", col))
		in.Mask.Data[k] = 1
	}
	_, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
	require.NoError(t, err)
}

// TestRolloutSequenceRejectionIsMasking: rejecting whole sequences gives
// the loss and gradient of the same batch with those rows' masks cleared by
// hand, in every loss mode (among them those that select tokens across
// rows) and with top-ρ entropy masking, in float64 and float32.
func TestRolloutSequenceRejectionIsMasking(t *testing.T) {
	in := withRollout(randomInputs(batchSpec{b: 9, t: 21, ref: true, weights: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 118}), 0.3, true, 8)
	in.Entropy = tensor.MustNew[float64](in.Logp.B, in.Logp.T)
	for i := range in.Entropy.Data {
		in.Entropy.Data[i] = 0.1 + float64(i%13)/10
	}
	// Rows whose e^{Σℓ} falls outside [1/2, 2] are rejected; clear them.
	masked := clone(in)
	masked.Entropy, masked.RolloutLogp = in.Entropy, in.RolloutLogp
	rejected := 0
	for b := range in.Logp.B {
		var sum float64
		for t, m := range in.Mask.Row(b) {
			if m == 1 {
				sum += in.OldLogp.At(b, t) - in.RolloutLogp.At(b, t)
			}
		}
		if w := math.Exp(sum); w < 0.5 || w > 2 {
			clear(masked.Mask.Row(b))
			rejected++
		}
	}
	require.NotZero(t, rejected, "no sequence rejected: the case does not exercise it")
	require.Less(t, rejected, in.Logp.B-2)
	for _, c := range []struct {
		mode    ppo.LossMode
		entropy float64
	}{{ppo.Vanilla, 0}, {ppo.Vanilla, 0.5}, {ppo.GSPO, 0}, {ppo.GSPOToken, 0}, {ppo.GeoMean, 0}, {ppo.CISPO, 0},
		{ppo.SAPO, 0}, {ppo.GPG, 0}, {ppo.ClipCov, 0}, {ppo.KLCov, 0}} {
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.KLCoef, cfg.EntropyTopRatio = c.mode, 0.05, c.entropy
		cfg.ClipCovRatio, cfg.ClipCovLow, cfg.ClipCovHigh = 0.2, 0.02, 5
		cfg.KLCovRatio, cfg.KLCovCoef = 0.2, 0.5
		for _, f32 := range []bool{false, true} {
			name := fmt.Sprintf("%v, top-ρ %v, float32 %v", c.mode, c.entropy, f32)
			run := func(in ppo.Inputs[float64], rs ppo.RolloutLevel) (ppo.Result, []float64) {
				cfg := cfg
				cfg.RolloutRS, cfg.RolloutRSThreshold = rs, 2
				if rs == ppo.RolloutOff {
					cfg.RolloutRSThreshold = 0 // a threshold with rejection off is an error
				}
				if c.mode == ppo.GeoMean {
					in.TokenWeights = tensor.Batch[float64]{}
				}
				if !f32 {
					g := make([]float64, in.Logp.Size())
					res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
					require.NoError(t, err, name)
					return res, g
				}
				in32 := to32(in)
				g := make([]float32, in.Logp.Size())
				res, err := ppo.PolicyLoss(like(g, in32.Logp), in32, cfg)
				require.NoError(t, err, name)
				g64 := make([]float64, len(g))
				for i, v := range g {
					g64[i] = float64(v)
				}
				return res, g64
			}
			got, gGot := run(in, ppo.RolloutSequence)
			want, gWant := run(masked, ppo.RolloutOff)
			assert.Equal(t, want.Tokens, got.Tokens, name)
			assert.Equal(t, want.Loss, got.Loss, name)
			assert.Equal(t, gWant, gGot, name)
		}
	}
}

// TestRolloutMicroBatchesAddUp: weights and rejections are row-local, so
// with the whole batch's counts (after rejection) micro-batches add up.
func TestRolloutMicroBatchesAddUp(t *testing.T) {
	in := withRollout(randomInputs(batchSpec{b: 7, t: 12, ref: true, spread: 0.3, nonPrefix: true, emptyRow: true, seed: 113}), 0.3, true, 3)
	for name, set := range rolloutConfigs() {
		for _, agg := range []ppo.Aggregation{ppo.TokenMean, ppo.SeqMeanTokenMean, ppo.SeqMeanTokenSum, ppo.SeqMeanTokenSumNorm, ppo.TokenSum} {
			cfg := ppo.DefaultConfig()
			cfg.Mode, cfg.KLCoef = agg, 0.02
			set(&cfg)
			whole := make([]float64, in.Logp.Size())
			res, err := ppo.PolicyLoss(gradBatch(whole, in), in, cfg)
			require.NoError(t, err)
			cfg.TokenCount, cfg.SeqCount = float64(res.Tokens), float64(res.Sequences)
			parts := make([]float64, in.Logp.Size())
			var sum float64
			for _, cut := range [][2]int{{0, 2}, {2, 3}, {3, 7}} {
				part := sliceInputs(in, cut[0], cut[1])
				part.RolloutLogp = rowsOf(in.RolloutLogp, cut[0], cut[1])
				r, err := ppo.PolicyLoss(gradBatch(parts[cut[0]*12:cut[1]*12], part), part, cfg)
				require.NoError(t, err)
				sum += r.Loss
			}
			assert.Truef(t, relClose(sum, res.Loss, 1e-12, 1e-15), "%s/%v: %.15g vs %.15g", name, agg, sum, res.Loss)
			for k := range whole {
				require.Truef(t, relClose(parts[k], whole[k], 1e-12, 1e-15), "%s/%v grad[%d]", name, agg, k)
			}
		}
	}
}

// TestRolloutAllocatesNothing: the rollout-corrected loss reuses its
// scratch, in float32 through the AVX2 path and in a loss mode.
func TestRolloutAllocatesNothing(t *testing.T) {
	// 61 tokens a row: the kernel's body and its padded tail.
	in := to32(withRollout(randomInputs(batchSpec{b: 8, t: 61, ref: true, spread: 0.3, seed: 114}), 0.2, true, 4))
	grad := make([]float32, in.Logp.Size())
	for _, mode := range []ppo.LossMode{ppo.Vanilla, ppo.CISPO} {
		cfg := ppo.DefaultConfig()
		cfg.LossMode, cfg.KLCoef = mode, 0.001
		cfg.RolloutIS, cfg.RolloutRS, cfg.RolloutRSThreshold = ppo.RolloutToken, ppo.RolloutGeometric, 1.5
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := ppo.PolicyLoss(gradBatch(grad, in), in, cfg); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "%v", mode)
	}
}

// TestRolloutAssemblyMatchesGo runs every correction, on batches whose
// lengths are not multiples of 8 and whose padding holds NaN and −Inf,
// through the AVX2 kernels and through the Go loops in float32, and
// compares both with the float64 result: the kernel's float32 log-ratios
// and exponential move weights by float32 rounding only.
func TestRolloutAssemblyMatchesGo(t *testing.T) {
	if !kernel.HasAVX2 {
		t.Skip("no AVX2 kernel on this processor or build")
	}
	for name, set := range rolloutConfigs() {
		for _, shape := range [][2]int{{3, 4}, {5, 37}, {4, 130}} {
			t.Run(fmt.Sprintf("%s/%dx%d", name, shape[0], shape[1]), func(t *testing.T) {
				spec := batchSpec{b: shape[0], t: shape[1], ref: true, weights: true, spread: 0.3, nonPrefix: true,
					garbageInPadding: true, seed: 115}
				in64 := withRollout(randomInputs(spec), 0.3, true, 5)
				cfg := ppo.DefaultConfig()
				cfg.KLCoef = 0.02
				set(&cfg)
				if cfg.OffPolicySeqMaskKL > 0 {
					for i, a := range in64.Advantages.Data {
						in64.Advantages.Data[i] = -math.Abs(a)
					}
				}
				want := make([]float64, in64.Logp.Size())
				ref, err := ppo.PolicyLoss(gradBatch(want, in64), in64, cfg)
				require.NoError(t, err)
				in := to32(in64)
				for _, lanes := range []int{kernel.PolicyLanes, 0} {
					avx := lanes > 0
					old := ppo.SetKernelLanes(lanes)
					g := make([]float32, in.Logp.Size())
					res, err := ppo.PolicyLoss(like(g, in.Logp), in, cfg)
					ppo.SetKernelLanes(old)
					require.NoError(t, err)
					assert.Truef(t, relClose(res.Loss, ref.Loss, 1e-5, 1e-7), "avx %v: loss %.9g, float64 %.9g", avx, res.Loss, ref.Loss)
					for k, v := range g {
						require.Truef(t, relClose(float64(v), want[k], 1e-5, 1e-7), "avx %v: grad[%d] = %.9g, float64 %.9g", avx, k, v, want[k])
					}
					got, w := res.Rollout, ref.Rollout
					for _, m := range []struct {
						name      string
						got, want float64
					}{{"KL", got.KL, w.KL}, {"K3KL", got.K3KL, w.K3KL}, {"TrainingPPL", got.TrainingPPL, w.TrainingPPL},
						{"RolloutPPL", got.RolloutPPL, w.RolloutPPL}, {"PPLRatio", got.PPLRatio, w.PPLRatio}, {"ISMean", got.ISMean, w.ISMean}} {
						assert.Truef(t, relClose(m.got, m.want, 1e-5, 1e-9), "avx %v: %s %.9g, float64 %.9g", avx, m.name, m.got, m.want)
					}
					assert.Equal(t, ref.Tokens, res.Tokens, "avx %v", avx)
					assert.Equal(t, w.ISTruncatedFrac, got.ISTruncatedFrac, "avx %v", avx)
					assert.Equal(t, w.RSMaskedFrac, got.RSMaskedFrac, "avx %v", avx)
					assert.Equal(t, w.OffPolicyMaskedFrac, got.OffPolicyMaskedFrac, "avx %v", avx)
				}
			})
		}
	}
}

// TestRolloutBitIdenticalAcrossCPUs: a rollout-corrected call gives the
// same bits on every call, with one CPU or several.
func TestRolloutBitIdenticalAcrossCPUs(t *testing.T) {
	in := to32(withRollout(randomInputs(batchSpec{b: 40, t: 1031, ref: true, weights: true, spread: 0.3, nonPrefix: true, seed: 116}), 0.2, true, 6))
	cfg := ppo.DefaultConfig()
	cfg.KLCoef = 0.01
	cfg.RolloutIS, cfg.RolloutRS, cfg.RolloutRSThreshold = ppo.RolloutToken, ppo.RolloutSequence, 2
	var first ppo.Result
	var firstGrad []float32
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, procs := range []int{1, 2, 4, 1, 2} {
		runtime.GOMAXPROCS(procs)
		g := make([]float32, in.Logp.Size())
		res, err := ppo.PolicyLoss(like(g, in.Logp), in, cfg)
		require.NoError(t, err)
		if i == 0 {
			require.NotZero(t, res.Rollout.RSSeqMaskedFrac, "no sequence rejected: the case does not exercise it")
			require.Less(t, res.Rollout.RSSeqMaskedFrac, 1.0)
			first, firstGrad = res, g
			continue
		}
		require.Equal(t, first, res, "GOMAXPROCS=%d", procs)
		for k := range g {
			require.Equal(t, math.Float32bits(firstGrad[k]), math.Float32bits(g[k]), "GOMAXPROCS=%d: grad[%d]", procs, k)
		}
	}
}

// TestOffPolicySequenceMasking: row 0 has a negative advantage and a mean
// log(π_sample/π_θ) of 0.5 > δ = 0.3: its policy term goes, its tokens stay
// in the token-mean denominator. Row 1 drifts as far with A > 0 and stays.
// With rollout log-probs the drift is measured against them instead.
func TestOffPolicySequenceMasking(t *testing.T) {
	mk := func(v ...float64) tensor.Batch[float64] {
		b := tensor.MustNew[float64](2, 2)
		copy(b.Data, v)
		return b
	}
	in := ppo.Inputs[float64]{Logp: mk(-1.5, -1.5, -1.5, -1.5), OldLogp: mk(-1, -1, -1, -1), Advantages: mk(-1, -1, 1, 1),
		Mask: mk(1, 1, 1, 1)}
	cfg := ppo.DefaultConfig()
	cfg.ClipLow, cfg.OffPolicySeqMaskKL = 0.9, 0.3
	g := make([]float64, 4)
	res, err := ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	r := math.Exp(-0.5)
	assert.InDeltaSlice(t, []float64{0, 0, -r / 4, -r / 4}, g, 1e-15)
	assert.Equal(t, 0.5, res.Rollout.OffPolicyMaskedFrac)
	assert.Equal(t, 4, res.Tokens)
	assert.Zero(t, res.Rollout.KL, "no rollout log-probs, no mismatch metrics")

	in.RolloutLogp = mk(-1.5, -1.5, -1.5, -1.5) // the sampler agrees with π_θ: nothing drifted
	res, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	require.NoError(t, err)
	assert.Zero(t, res.Rollout.OffPolicyMaskedFrac)
	assert.InDelta(t, r/4, g[0], 1e-15)

	in.RolloutLogp = nil0(in.RolloutLogp)
	cfg.OffPolicySeqMaskKL = -1
	_, err = ppo.PolicyLoss(gradBatch(g, in), in, cfg)
	assert.ErrorIs(t, err, tensor.ErrRange)
}

func nil0(tensor.Batch[float64]) tensor.Batch[float64] { return tensor.Batch[float64]{} }

// benchRollout is the rollout log-probs of `rlpost bench -op
// policy_loss_rollout`: old_logp moved ±0.05 nats, and 2 nats down on every
// 64th token.
func benchRollout(d *benchdata.Batch) tensor.Batch[float32] {
	roll := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	for i, v := range d.OldLogp.Data {
		roll.Data[i] = v + 0.05*float32(i%3-1)
		if i%64 == 0 {
			roll.Data[i] -= 2
		}
	}
	return roll
}

// BenchmarkPolicyLossRollout is the `rlpost bench -op policy_loss_rollout`
// work: BenchmarkPolicyLoss with token-level importance weights truncated
// at 2 and geometric-mean rejection outside [½, 2].
func BenchmarkPolicyLossRollout(b *testing.B) {
	cfg := bench.PolicyLossRolloutConfig()
	var roll tensor.Batch[float32]
	benchLoss(b, 64, 4096, func(d *benchdata.Batch, grad tensor.Batch[float32]) error {
		if roll.IsZero() {
			roll = benchRollout(d)
		}
		in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp,
			RolloutLogp: roll}
		_, err := ppo.PolicyLoss(grad, in, cfg)
		return err
	})
}
