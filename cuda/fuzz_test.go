//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"math"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// The fuzz targets are differential: whatever the bytes make of the inputs
// (NaN, infinities, huge values, masks that are not 0 or 1, any
// configuration), the device must answer as the CPU package does: the same
// error (argument, index, kind), or results within tolerance.

// byteSource turns fuzz bytes into values, 0 once they run out.
type byteSource struct{ b []byte }

func (s *byteSource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	v := s.b[0]
	s.b = s.b[1:]
	return v
}

// value is mostly an ordinary number, sometimes a special one.
func (s *byteSource) value() float32 {
	switch k := s.byte(); {
	case k < 200:
		return (float32(k) - 100) / 25
	case k < 210:
		return float32(math.NaN())
	case k < 220:
		return float32(math.Inf(int(k%2)*2 - 1))
	case k < 230:
		return 3e38
	default:
		return float32(k-230) * 1e-3
	}
}

// maskValue is 0 or 1, rarely something else.
func (s *byteSource) maskValue() float32 {
	switch k := s.byte(); {
	case k < 120:
		return 0
	case k < 252:
		return 1
	case k < 254:
		return 0.5
	default:
		return float32(math.NaN())
	}
}

func (s *byteSource) batch(b, t int, f func() float32) tensor.Batch[float32] {
	x := tensor.MustNew[float32](b, t)
	for i := range x.Data {
		x.Data[i] = f()
	}
	return x
}

// agree fails t unless the two calls agree: the same error, or both fine.
func agree(t *testing.T, got, want error) bool {
	t.Helper()
	if want == nil && got == nil {
		return true
	}
	if want == nil || got == nil {
		t.Fatalf("GPU error %v, CPU error %v", got, want)
	}
	var ae *tensor.ArgError
	if errors.As(want, &ae) {
		sameError(t, got, want)
	} else if errors.As(got, &ae) {
		t.Fatalf("GPU error %v, CPU error %v", got, want)
	}
	return false
}

func FuzzPolicyLoss(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 0, 0, 150, 160, 90, 200, 210, 220, 10, 130, 140})
	f.Add([]byte{7, 13, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104, 250, 251, 252, 253})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteSource{data}
		b, n := 1+int(s.byte()%3), 1+int(s.byte()%40)
		opts := s.byte()
		cfg := ppo.DefaultConfig()
		cfg.ClipLow, cfg.ClipHigh = float64(s.byte()%9)/10, float64(s.byte()%9)/10
		if opts&1 != 0 {
			cfg.DualClip = 1 + float64(s.byte()%30)/10
		}
		cfg.LogRatioClamp = float64(s.byte() % 4)
		cfg.RatioLevel = ppo.RatioLevel((opts >> 1) & 1)
		cfg.Mode = ppo.Aggregation(s.byte() % 5)
		cfg.TokenCount = float64(s.byte() % 80)
		cfg.SeqCount = float64(s.byte() % 5)
		cfg.Norm = float64(s.byte() % 3)
		cfg.KLEstimator = ppo.KLEstimator(s.byte() % 3)
		cfg.KLClamp = float64(s.byte()%3) / 2
		cfg.BehaveCap = float64(s.byte() % 4)
		cfg.BehaveCapMode = ppo.CapMode((opts >> 2) & 1)
		in := ppo.Inputs[float32]{
			Mask: s.batch(b, n, s.maskValue), Logp: s.batch(b, n, s.value),
			OldLogp: s.batch(b, n, s.value), Advantages: s.batch(b, n, s.value),
		}
		if opts&8 != 0 {
			in.ProxLogp = s.batch(b, n, s.value)
		}
		if opts&16 != 0 {
			in.RefLogp = s.batch(b, n, s.value)
			cfg.KLCoef = float64(s.byte()%5) / 10
		}
		if opts&32 != 0 {
			in.TokenWeights = s.batch(b, n, s.value)
		}
		wantGrad := make([]float32, b*n)
		want, wantErr := ppo.PolicyLoss(tensor.Batch[float32]{Shape: in.Logp.Shape, Data: wantGrad}, in, cfg)
		c := device(t)
		grad := output(t, c, b, n)
		got, gotErr := c.PolicyLoss(grad, uploadPolicy(t, c, in), cfg)
		if !agree(t, gotErr, wantErr) {
			return
		}
		// Ratios on a clip bound may fall either side between CUDA's exp
		// and the CPU's; compare only away from ties.
		if fuzzTie(in, cfg) {
			return
		}
		checkScalar(t, "Loss", got.Loss, want.Loss, 1e-6*(1+math.Abs(want.PolicyLoss)+math.Abs(want.KLLoss)))
		checkClose(t, "grad", download(t, grad), wantGrad, n)
	})
}

// fuzzTie reports whether some valid token's ratio lies within 1e-6 of a
// clip bound or its log-ratio of the clamp, where the last bit of exp
// decides the branch.
func fuzzTie(in ppo.Inputs[float32], cfg ppo.Config) bool {
	bounds := []float64{1 - cfg.ClipLow, 1 + cfg.ClipHigh, cfg.DualClip, cfg.BehaveCap}
	for i, m := range in.Mask.Data {
		if m != 1 {
			continue
		}
		base, l := float64(in.OldLogp.Data[i]), float64(in.Logp.Data[i])
		if !in.ProxLogp.IsZero() {
			if w := math.Exp(float64(in.ProxLogp.Data[i]) - base); math.Abs(w-cfg.BehaveCap) < 1e-6*(1+w) {
				return true
			}
			base = float64(in.ProxLogp.Data[i])
		}
		r := math.Exp(l - base)
		for _, x := range bounds {
			if math.Abs(r-x) < 1e-6*(1+x) {
				return true
			}
		}
		if math.Abs(math.Abs(l-base)-cfg.LogRatioClamp) < 1e-6 {
			return true
		}
	}
	return cfg.RatioLevel == ppo.SequenceRatio // means of the row in another order
}

func FuzzGAE(f *testing.F) {
	f.Add([]byte{2, 30, 0, 250, 250, 10, 20, 30, 40, 250, 0, 7})
	f.Add([]byte{1, 9, 1, 250, 0, 250, 3, 4, 5, 6, 7, 8, 200, 250, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteSource{data}
		b, n := 1+int(s.byte()%3), 1+int(s.byte()%40)
		bilevel := s.byte()%2 == 1
		cfg := gae.Config{Gamma: float64(s.byte()%11) / 10, Lambda: float64(s.byte()%11) / 10, Whiten: s.byte()%2 == 1}
		bcfg := gae.BiLevelConfig{GammaToken: cfg.Gamma, LambdaToken: cfg.Lambda,
			GammaTurn: float64(s.byte()%11) / 10, LambdaTurn: float64(s.byte()%11) / 10, Whiten: cfg.Whiten}
		in := gaeInputs{mask: s.batch(b, n, s.maskValue), rewards: s.batch(b, n, s.value), values: s.batch(b, n, s.value)}
		if bilevel {
			in.ends = s.batch(b, n, s.maskValue)
		}
		c := device(t)
		gotA, gotR, wantA, wantR, gotErr, wantErr := runGAE(t, c, in, cfg, bcfg, bilevel)
		if !agree(t, gotErr, wantErr) {
			return
		}
		checkClose(t, "adv", gotA, wantA, n)
		checkClose(t, "ret", gotR, wantR, n)
	})
}

func FuzzGroupAdvantages(f *testing.F) {
	f.Add([]byte{4, 2, 0, 1, 2, 3, 4, 100, 100, 100, 100}, uint8(0))
	f.Add([]byte{5, 3, 1, 210, 1, 2, 3, 4, 5, 6, 7, 8}, uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, opts uint8) {
		s := &byteSource{data}
		n, g := 1+int(s.byte()%60), int(s.byte()%9)
		cfg := grpo.Config{Estimator: grpo.Estimator(opts & 1), Scale: grpo.Scale((opts >> 1) % 3),
			Std: grpo.Std((opts >> 3) & 1), Eps: float64(s.byte()%3) * 1e-6}
		rewards := make([]float32, n)
		for i := range rewards {
			rewards[i] = s.value()
		}
		want := make([]float32, n)
		_, wantErr := grpo.Advantages(want, rewards, grpo.Contiguous(g), cfg)
		c := device(t)
		r, err := c.UploadVec(rewards)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Free()
		dst := output(t, c, 1, n)
		_, gotErr := c.GroupAdvantages(dst, r, g, cfg)
		var ae *tensor.ArgError
		if errors.As(wantErr, &ae) && ae.Arg == "dst" && gotErr != nil {
			return // grpo names the index within the group (see TestGroupAdvantagesErrors)
		}
		if !agree(t, gotErr, wantErr) {
			return
		}
		checkClose(t, "advantages", download(t, dst), want, n)
	})
}

func FuzzTASWeights(f *testing.F) {
	f.Add([]byte{2, 20, 3, 0, 250, 250, 0, 250, 250, 250, 0}, 0.3)
	f.Add([]byte{1, 5, 1, 253, 250}, 1e39)
	f.Fuzz(func(t *testing.T, data []byte, lambda float64) {
		s := &byteSource{data}
		b, n := 1+int(s.byte()%3), 1+int(s.byte()%40)
		cfg := tas.Config{Lambda: lambda, Shape: tas.Curve(s.byte()%4) - 1} // −1 is not a Curve
		mask := s.batch(b, n, s.maskValue)
		want := tensor.MustNew[float32](b, n)
		wantErr := tas.Weights(want, mask, cfg)
		c := device(t)
		dst := output(t, c, b, n)
		if !agree(t, c.TASWeights(dst, upload(t, c, mask), cfg), wantErr) {
			return
		}
		sameBits(t, "weights", download(t, dst), want.Data)
	})
}
