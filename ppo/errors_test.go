package ppo_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

func TestPolicyLossRejectsBadInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	base := func() ppo.Inputs[float64] {
		return randomInputs(batchSpec{b: 3, t: 9, prox: true, ref: true, weights: true, spread: 0.2, seed: 41})
	}
	full := func(in ppo.Inputs[float64]) ppo.Inputs[float64] {
		for i := range in.Mask.Data {
			in.Mask.Data[i] = 1
		}
		return in
	}
	set := func(x tensor.Batch[float64], b, t int, v float64) { x.Data[b*x.T+t] = v }
	cfg := ppo.DefaultConfig()
	cfg.KLCoef = 0.1
	cases := []struct {
		name   string
		in     func() ppo.Inputs[float64]
		cfg    func(*ppo.Config)
		grad   int // length of grad; 0 means B·T
		kind   error
		substr string
	}{
		{"NaN logp", func() ppo.Inputs[float64] { in := full(base()); set(in.Logp, 1, 2, nan); return in }, nil, 0, tensor.ErrNonFinite, "logp[1,2]"},
		{"Inf old_logp", func() ppo.Inputs[float64] { in := full(base()); set(in.OldLogp, 2, 8, inf); return in }, nil, 0, tensor.ErrNonFinite, "old_logp[2,8]"},
		{"NaN advantage", func() ppo.Inputs[float64] { in := full(base()); set(in.Advantages, 0, 5, nan); return in }, nil, 0, tensor.ErrNonFinite, "advantages[0,5]"},
		{"NaN prox", func() ppo.Inputs[float64] { in := full(base()); set(in.ProxLogp, 1, 4, nan); return in }, nil, 0, tensor.ErrNonFinite, "prox_logp[1,4]"},
		{"-Inf ref", func() ppo.Inputs[float64] { in := full(base()); set(in.RefLogp, 0, 0, -inf); return in }, nil, 0, tensor.ErrNonFinite, "ref_logp[0,0]"},
		{"negative weight", func() ppo.Inputs[float64] { in := full(base()); set(in.TokenWeights, 2, 3, -0.5); return in }, nil, 0, tensor.ErrRange, "token_weights[2,3]"},
		{"NaN weight", func() ppo.Inputs[float64] { in := full(base()); set(in.TokenWeights, 1, 1, nan); return in }, nil, 0, tensor.ErrNonFinite, "token_weights[1,1]"},
		{"mask 0.5", func() ppo.Inputs[float64] { in := base(); set(in.Mask, 2, 6, 0.5); return in }, nil, 0, tensor.ErrMask, "mask[2,6]"},
		{"mask NaN", func() ppo.Inputs[float64] { in := base(); set(in.Mask, 0, 1, nan); return in }, nil, 0, tensor.ErrMask, "mask[0,1]"},
		{"old_logp shape", func() ppo.Inputs[float64] { in := base(); in.OldLogp = tensor.MustNew[float64](3, 8); return in }, nil, 0, tensor.ErrShape, "old_logp"},
		{"logp data length", func() ppo.Inputs[float64] { in := base(); in.Logp.Data = in.Logp.Data[:20]; return in }, nil, 0, tensor.ErrShape, "logp"},
		{"ref shape", func() ppo.Inputs[float64] { in := base(); in.RefLogp = tensor.MustNew[float64](2, 9); return in }, nil, 0, tensor.ErrShape, "ref_logp"},
		{"empty batch", func() ppo.Inputs[float64] { return ppo.Inputs[float64]{Logp: tensor.MustNew[float64](0, 5)} }, nil, 0, tensor.ErrEmpty, "logp"},
		{"grad length", base, nil, 5, tensor.ErrShape, "grad"},
		{"KL without ref", func() ppo.Inputs[float64] { in := base(); in.RefLogp = tensor.Batch[float64]{}; return in }, nil, 0, tensor.ErrEmpty, "ref_logp"},
		{"ClipLow 1.2", base, func(c *ppo.Config) { c.ClipLow = 1.2 }, 0, tensor.ErrRange, "Config.ClipLow"},
		{"ClipHigh NaN", base, func(c *ppo.Config) { c.ClipHigh = nan }, 0, tensor.ErrRange, "Config.ClipHigh"},
		{"DualClip 0.5", base, func(c *ppo.Config) { c.DualClip = 0.5 }, 0, tensor.ErrRange, "Config.DualClip"},
		{"negative cap", base, func(c *ppo.Config) { c.BehaveCap = -1 }, 0, tensor.ErrRange, "Config.BehaveCap"},
		{"negative clamp", base, func(c *ppo.Config) { c.LogRatioClamp = -3 }, 0, tensor.ErrRange, "Config.LogRatioClamp"},
		{"KLCoef Inf", base, func(c *ppo.Config) { c.KLCoef = inf }, 0, tensor.ErrRange, "Config.KLCoef"},
		{"bad mode", base, func(c *ppo.Config) { c.Mode = 9 }, 0, tensor.ErrRange, "Config.Mode"},
		{"bad estimator", base, func(c *ppo.Config) { c.KLEstimator = 7 }, 0, tensor.ErrRange, "Config.KLEstimator"},
		{"token count below local", base, func(c *ppo.Config) { c.TokenCount = 2 }, 0, tensor.ErrRange, "Config.TokenCount"},
		{"seq count below local", base, func(c *ppo.Config) { c.Mode, c.SeqCount = ppo.SeqMeanTokenMean, 1 }, 0, tensor.ErrRange, "Config.SeqCount"},
		{"KL overflow", func() ppo.Inputs[float64] { in := full(base()); set(in.RefLogp, 1, 3, 900); return in }, nil, 0, tensor.ErrRange, ""},
	}
	for _, c := range cases {
		for _, prec := range []string{"float64", "float32"} {
			t.Run(c.name+"/"+prec, func(t *testing.T) {
				in := c.in()
				conf := cfg
				if c.cfg != nil {
					c.cfg(&conf)
				}
				n := in.Logp.B * in.Logp.T
				if c.grad != 0 {
					n = c.grad
				}
				var err error
				if prec == "float64" {
					_, err = ppo.PolicyLoss(like(make([]float64, n), in.Logp), in, conf)
				} else {
					in32 := to32(in)
					if in.Logp.Data != nil && len(in.Logp.Data) != in.Logp.B*in.Logp.T {
						in32.Logp.Data = in32.Logp.Data[:len(in.Logp.Data)]
					}
					_, err = ppo.PolicyLoss(like(make([]float32, n), in32.Logp), in32, conf)
				}
				if err == nil {
					t.Fatal("no error")
				}
				if !errors.Is(err, c.kind) {
					t.Errorf("error %q is not %v", err, c.kind)
				}
				if !strings.Contains(err.Error(), c.substr) {
					t.Errorf("error %q does not name %q", err, c.substr)
				}
			})
		}
	}
}

func TestValueLossRejectsBadInput(t *testing.T) {
	mk := func() ppo.ValueInputs[float64] {
		in := ppo.ValueInputs[float64]{Values: tensor.MustNew[float64](2, 3), OldValues: tensor.MustNew[float64](2, 3),
			Returns: tensor.MustNew[float64](2, 3), Mask: tensor.MustNew[float64](2, 3)}
		for i := range in.Mask.Data {
			in.Mask.Data[i] = 1
		}
		return in
	}
	cases := []struct {
		name   string
		in     func() ppo.ValueInputs[float64]
		cfg    ppo.ValueConfig
		kind   error
		substr string
	}{
		{"NaN value", func() ppo.ValueInputs[float64] { in := mk(); in.Values.Data[4] = math.NaN(); return in }, ppo.DefaultValueConfig(), tensor.ErrNonFinite, "values[1,1]"},
		{"Inf return", func() ppo.ValueInputs[float64] { in := mk(); in.Returns.Data[2] = math.Inf(-1); return in }, ppo.DefaultValueConfig(), tensor.ErrNonFinite, "returns[0,2]"},
		{"NaN old value", func() ppo.ValueInputs[float64] { in := mk(); in.OldValues.Data[0] = math.NaN(); return in }, ppo.DefaultValueConfig(), tensor.ErrNonFinite, "old_values[0,0]"},
		{"mask 2", func() ppo.ValueInputs[float64] { in := mk(); in.Mask.Data[5] = 2; return in }, ppo.DefaultValueConfig(), tensor.ErrMask, "mask[1,2]"},
		{"missing old values", func() ppo.ValueInputs[float64] { in := mk(); in.OldValues = tensor.Batch[float64]{}; return in }, ppo.DefaultValueConfig(), tensor.ErrShape, "old_values"},
		{"returns shape", func() ppo.ValueInputs[float64] { in := mk(); in.Returns = tensor.MustNew[float64](3, 2); return in }, ppo.DefaultValueConfig(), tensor.ErrShape, "returns"},
		{"negative clip", mk, ppo.ValueConfig{Clip: -1}, tensor.ErrRange, "ValueConfig.Clip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in()
			_, err := ppo.ValueLoss(like(make([]float64, 6), in.Values), in, c.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) {
				t.Errorf("error %q, want %v naming %q", err, c.kind, c.substr)
			}
		})
	}
}

// TestPaddingIsNeverRead: NaN, ±Inf and negative weights at mask-0 positions
// change nothing.
func TestPaddingIsNeverRead(t *testing.T) {
	spec := batchSpec{b: 4, t: 23, prox: true, ref: true, weights: true, spread: 0.3, nonPrefix: true, seed: 51}
	clean := randomInputs(spec)
	spec.garbageInPadding = true
	dirty := randomInputs(spec)
	cfg := ppo.DefaultConfig()
	cfg.KLCoef = 0.1
	g1, g2 := make([]float64, clean.Logp.Size()), make([]float64, clean.Logp.Size())
	r1, err1 := ppo.PolicyLoss(like(g1, clean.Logp), clean, cfg)
	r2, err2 := ppo.PolicyLoss(like(g2, dirty.Logp), dirty, cfg)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if r1 != r2 {
		t.Errorf("results differ: %+v vs %+v", r1, r2)
	}
	for k := range g1 {
		if g1[k] != g2[k] {
			t.Fatalf("grad[%d]: %v vs %v", k, g1[k], g2[k])
		}
	}
}

// TestLossesAllocateNothing: once warm, PolicyLoss and ValueLoss allocate
// nothing, on the parallel path (large batch) and the serial one.
func TestLossesAllocateNothing(t *testing.T) {
	for _, shape := range [][2]int{{3, 50}, {16, 2048}} {
		in := to32(randomInputs(batchSpec{b: shape[0], t: shape[1], ref: true, prox: true, weights: true, spread: 0.3, nonPrefix: true, seed: 61}))
		cfg := ppo.DefaultConfig()
		cfg.KLCoef, cfg.DualClip = 0.01, 3
		grad := make([]float32, in.Logp.Size())
		vin := ppo.ValueInputs[float32]{Values: in.Logp, OldValues: in.OldLogp, Returns: in.ProxLogp, Mask: in.Mask}
		for name, f := range map[string]func(){
			"PolicyLoss": func() {
				if _, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg); err != nil {
					t.Fatal(err)
				}
			},
			"PolicyLoss/GSPO": func() {
				c := cfg
				c.RatioLevel = ppo.SequenceRatio
				if _, err := ppo.PolicyLoss(like(grad, in.Logp), in, c); err != nil {
					t.Fatal(err)
				}
			},
			"ValueLoss": func() {
				if _, err := ppo.ValueLoss(like(grad, vin.Values), vin, ppo.DefaultValueConfig()); err != nil {
					t.Fatal(err)
				}
			},
		} {
			f()
			if n := testing.AllocsPerRun(20, f); n != 0 {
				t.Errorf("%s %v: %v allocations per call", name, shape, n)
			}
		}
	}
}
