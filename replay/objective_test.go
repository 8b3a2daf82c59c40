package replay_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// step is one hybrid step's inputs: g groups of k on-policy responses and
// nOff replayed ones, with non-prefix masks and per-row behaviour policies.
type step[F tensor.Float] struct {
	on  replay.OnPolicy[F]
	off replay.OffPolicy[F]
}

func randomStep[F tensor.Float](seed uint64, g, k, nOff, T int, ref bool) step[F] {
	rng := rand.New(rand.NewPCG(seed, 99))
	mask := func(b int) tensor.Batch[F] {
		m := tensor.MustNew[F](b, T)
		for i := range b {
			for t := range T {
				// A prompt, then tokens with an observation gap.
				if t >= 2 && (t < T/2 || t > T/2+1) && rng.IntN(8) > 0 {
					m.Set(i, t, 1)
				}
			}
			m.Set(i, T-1, 1) // at least one valid token
		}
		return m
	}
	logp := func(b int) tensor.Batch[F] {
		x := tensor.MustNew[F](b, T)
		for i := range x.Data {
			x.Data[i] = F(-0.1 - 2*rng.Float64())
		}
		return x
	}
	near := func(x tensor.Batch[F], spread float64) tensor.Batch[F] {
		y := tensor.MustNew[F](x.B, x.T)
		for i := range y.Data {
			y.Data[i] = x.Data[i] + F(spread*(2*rng.Float64()-1))
		}
		return y
	}
	var s step[F]
	bOn := g * k
	s.on.Logp, s.on.Mask = logp(bOn), mask(bOn)
	s.on.OldLogp = near(s.on.Logp, 0.3)
	s.on.Rewards = make([]F, bOn)
	for i := range s.on.Rewards {
		s.on.Rewards[i] = F(rng.IntN(3)) / 2
	}
	s.on.Groups = grpo.Contiguous(k)
	s.off.Logp, s.off.Mask = logp(nOff), mask(nOff)
	behave := near(s.off.Logp, 0.4)
	s.off.Samples = make([]replay.Sampled, nOff)
	for i := range nOff {
		var lp []float32
		for t, v := range s.off.Mask.Row(i) {
			if v == 1 {
				lp = append(lp, float32(behave.At(i, t)))
			}
		}
		s.off.Samples[i] = replay.Sampled{
			Experience: replay.Experience{Prompt: uint64(i), Logp: lp, Reward: float64(rng.IntN(2))},
			Baseline:   rng.Float64(),
		}
	}
	if ref {
		s.on.RefLogp, s.off.RefLogp = near(s.on.Logp, 0.2), near(s.off.Logp, 0.2)
	}
	return s
}

// objective returns AVATAR's objective without the KL term (most steps
// here have no reference log-probs), adjusted by f.
func objective[F tensor.Float](t testing.TB, f func(*replay.ObjectiveConfig)) *replay.Objective[F] {
	t.Helper()
	cfg := replay.DefaultObjectiveConfig()
	cfg.Loss.KLCoef = 0
	if f != nil {
		f(&cfg)
	}
	o, err := replay.NewObjective[F](cfg)
	require.NoError(t, err)
	return o
}

// TestStepComposesPackages: Step is exactly grpo → tas → ppo on the fresh
// rows, and Eq. 11 → tas → ppo over the stored behaviour log-probs on the
// replayed rows, times α.
func TestStepComposesPackages(t *testing.T) {
	s := randomStep[float32](1, 2, 4, 4, 12, true)
	cfg := replay.DefaultObjectiveConfig()
	cfg.Loss, cfg.Alpha = grpo.GRPOLoss(), 0.5
	o := objective[float32](t, func(c *replay.ObjectiveConfig) { *c = cfg })
	gradOn, gradOff := make([]float32, s.on.Logp.Size()), make([]float32, s.off.Logp.Size())
	res, err := o.Step(like(gradOn, s.on.Logp), like(gradOff, s.off.Logp), s.on, s.off)
	require.NoError(t, err)

	adv := make([]float32, len(s.on.Rewards))
	_, err = grpo.Advantages(adv, s.on.Rewards, s.on.Groups, cfg.Group)
	require.NoError(t, err)
	tok := tensor.MustNew[float32](s.on.Logp.B, s.on.Logp.T)
	tas.ApplySequence(tok, adv, s.on.Mask, cfg.TAS)
	wantOn := make([]float32, len(gradOn))
	rOn, err := ppo.PolicyLoss(like(wantOn, s.on.Logp), ppo.Inputs[float32]{Logp: s.on.Logp, OldLogp: s.on.OldLogp, Advantages: tok, Mask: s.on.Mask, RefLogp: s.on.RefLogp}, cfg.Loss)
	require.NoError(t, err)

	n := len(s.off.Samples)
	rew, base, advOff := make([]float32, n), make([]float32, n), make([]float32, n)
	old := tensor.MustNew[float32](n, s.off.Logp.T)
	for i, sm := range s.off.Samples {
		rew[i], base[i] = float32(sm.Reward), float32(sm.Baseline)
		k := 0
		for tt, v := range s.off.Mask.Row(i) {
			if v == 1 {
				old.Set(i, tt, sm.Logp[k])
				k++
			}
		}
	}
	_, err = replay.Advantages(advOff, rew, base, cfg.Off)
	require.NoError(t, err)
	tokOff := tensor.MustNew[float32](n, s.off.Logp.T)
	tas.ApplySequence(tokOff, advOff, s.off.Mask, cfg.TAS)
	wantOff := make([]float32, len(gradOff))
	rOff, err := ppo.PolicyLoss(like(wantOff, s.off.Logp), ppo.Inputs[float32]{Logp: s.off.Logp, OldLogp: old, Advantages: tokOff, Mask: s.off.Mask, RefLogp: s.off.RefLogp}, cfg.Loss)
	require.NoError(t, err)

	for i := range gradOn {
		require.Equal(t, wantOn[i], gradOn[i], "gradOn[%d]", i)
	}
	for i := range gradOff {
		// Rewards and baselines differ in float32 rounding only.
		if w := 0.5 * float64(wantOff[i]); math.Abs(float64(gradOff[i])-w) > 1e-5*math.Abs(w)+1e-9 {
			t.Fatalf("gradOff[%d] = %v, want α·%v", i, gradOff[i], wantOff[i])
		}
	}
	if math.Abs(res.On.Loss-rOn.Loss) > 1e-12 || math.Abs(res.Off.Loss-rOff.Loss) > 1e-6 ||
		math.Abs(res.Loss-(rOn.Loss+0.5*rOff.Loss)) > 1e-6 {
		t.Errorf("losses %v = %v + 0.5·%v, want %v and %v", res.Loss, res.On.Loss, res.Off.Loss, rOn.Loss, rOff.Loss)
	}
	for i, a := range o.OffAdvantages() {
		if math.Abs(float64(a-advOff[i])) > 1e-5 {
			t.Errorf("OffAdvantages()[%d] = %v, want %v", i, a, advOff[i])
		}
	}
}

// TestStepGradientMatchesFiniteDifferences checks dL/dlogp of both parts
// against central differences of the float64 total loss L_on + α·L_off,
// with the KL term, TAS and non-prefix masks.
func TestStepGradientMatchesFiniteDifferences(t *testing.T) {
	const h = 1e-6
	for _, c := range []struct {
		name string
		loss ppo.Config
		ref  bool
	}{
		{"token-mean", ppo.DefaultConfig(), false},
		{"grpo+kl", grpo.GRPOLoss(), true},
		{"dapo", grpo.DAPOLoss(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := randomStep[float64](7, 2, 3, 3, 9, c.ref)
			o := objective[float64](t, func(cfg *replay.ObjectiveConfig) { cfg.Loss, cfg.Alpha = c.loss, 0.7 })
			gOn, gOff := make([]float64, s.on.Logp.Size()), make([]float64, s.off.Logp.Size())
			_, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
			require.NoError(t, err)
			loss := func() float64 {
				r, err := o.Step(like(make([]float64, len(gOn)), s.on.Logp), like(make([]float64, len(gOff)), s.off.Logp), s.on, s.off)
				require.NoError(t, err)
				return r.Loss
			}
			for _, part := range []struct {
				name string
				x    []float64
				mask []float64
				grad []float64
			}{{"on", s.on.Logp.Data, s.on.Mask.Data, gOn}, {"off", s.off.Logp.Data, s.off.Mask.Data, gOff}} {
				for i := range part.x {
					x := part.x[i]
					part.x[i] = x + h
					up := loss()
					part.x[i] = x - h
					down := loss()
					part.x[i] = x
					fd := (up - down) / (2 * h)
					if part.mask[i] == 0 && part.grad[i] != 0 {
						t.Fatalf("%s grad[%d] = %v on a masked token", part.name, i, part.grad[i])
					}
					if math.Abs(fd-part.grad[i]) > 1e-6+1e-5*math.Abs(fd) {
						t.Fatalf("%s grad[%d] = %v, finite difference %v", part.name, i, part.grad[i], fd)
					}
				}
			}
		})
	}
}

// TestStepRescue: an on-policy group with equal rewards vanishes (Eq. 1
// gives it nothing); it is rescued only by a replayed row of its own prompt
// with a non-zero Eq. 11 advantage — not by replayed rows of other prompts,
// and not when R = R̄ on its own rows.
func TestStepRescue(t *testing.T) {
	s := randomStep[float64](3, 1, 4, 2, 6, false)
	s.on.Rewards = []float64{1, 1, 1, 1}
	s.on.Prompts = []uint64{5, 5, 5, 5}
	for _, c := range []struct {
		name      string
		alpha     float64
		prompts   [2]uint64
		rewards   [2]float64
		baselines [2]float64
		rescued   int
	}{
		{"rescued", 1, [2]uint64{5, 5}, [2]float64{1, 1}, [2]float64{0.4, 0.9}, 1},
		{"one own row is enough", 0.6, [2]uint64{9, 5}, [2]float64{1, 1}, [2]float64{0.4, 0.9}, 1},
		{"other prompts only", 1, [2]uint64{8, 9}, [2]float64{1, 1}, [2]float64{0.4, 0.9}, 0},
		{"own rows at their baseline", 1, [2]uint64{5, 9}, [2]float64{1, 0}, [2]float64{1, 0.5}, 0},
		{"off advantages zero", 1, [2]uint64{5, 5}, [2]float64{1, 0}, [2]float64{1, 0}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := objective[float64](t, func(cfg *replay.ObjectiveConfig) { cfg.Alpha = c.alpha })
			for i := range 2 {
				s.off.Samples[i].Reward, s.off.Samples[i].Baseline = c.rewards[i], c.baselines[i]
				s.off.Samples[i].Prompt = c.prompts[i]
			}
			gOn, gOff := make([]float64, s.on.Logp.Size()), make([]float64, s.off.Logp.Size())
			res, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
			require.NoError(t, err)
			assert.Equal(t, 1, res.Vanishing, "vanishing rescued, want 1 and")
			assert.Equal(t, c.rescued, res.Rescued, "vanishing rescued, want 1 and")
			for i, g := range gOn {
				require.Equal(t, float64(0), g, "a vanished group has gradient at %d", i)
			}
			tot := o.Totals()
			assert.Equal(t, 1, tot.Steps, "totals %+v, fraction", tot)
			assert.Equal(t, 1, tot.Groups, "totals %+v, fraction", tot)
			assert.Equal(t, 1, tot.Vanishing, "totals %+v, fraction", tot)
			assert.Equal(t, c.rescued, tot.Rescued, "totals %+v, fraction", tot)
			assert.Equal(t, float64(c.rescued), tot.RescuedFrac(), "totals %+v, fraction", tot)
		})
	}
}

// TestStepUsesStoredBehaviour: when the current log-probs equal the stored
// ones on a non-prefix mask, every ratio is 1 and the KL estimates are 0;
// shifting the policy by x gives KL e^x·x − e^x + 1 on every row.
func TestStepUsesStoredBehaviour(t *testing.T) {
	s := randomStep[float64](5, 1, 2, 3, 10, false)
	for i, sm := range s.off.Samples {
		k := 0
		for tt, v := range s.off.Mask.Row(i) {
			if v == 1 {
				s.off.Logp.Set(i, tt, float64(sm.Logp[k]))
				k++
			} else {
				s.off.Logp.Set(i, tt, math.Inf(-1)) // padding is never read
			}
		}
	}
	o := objective[float64](t, nil)
	gOn, gOff := make([]float64, s.on.Logp.Size()), make([]float64, s.off.Logp.Size())
	res, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
	require.NoError(t, err)
	assert.InDelta(t, 1, res.Off.MeanRatio, 1e-12, "off-policy ratio approx KL %v, want 1 and 0", res.Off.ApproxKL)
	assert.LessOrEqual(t, math.Abs(res.Off.ApproxKL), 1e-12, "off-policy ratio approx KL %v, want 1 and 0", res.Off.ApproxKL)
	for i, kl := range o.OffKL() {
		assert.LessOrEqual(t, math.Abs(kl), 1e-12, "OffKL[%d] = %v, want 0", i, kl)
	}
	const x = 0.3
	for i := range s.off.Logp.Data {
		s.off.Logp.Data[i] += x
	}
	_, err = o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
	require.NoError(t, err)
	want := math.Exp(x)*x - math.Exp(x) + 1
	for i, kl := range o.OffKL() {
		assert.InDelta(t, want, kl, 1e-9, "OffKL[%d]", i)
	}
}

// TestStepOneSided: a step may be all fresh or all replayed, not empty.
func TestStepOneSided(t *testing.T) {
	s := randomStep[float64](9, 1, 4, 4, 8, false)
	o := objective[float64](t, nil)
	onOnly, err := o.Step(like(make([]float64, s.on.Logp.Size()), s.on.Logp), tensor.Batch[float64]{}, s.on, replay.OffPolicy[float64]{})
	require.NoError(t, err, "on-policy only: %+v", onOnly)
	require.Equal(t, 0, onOnly.Off.Tokens, "on-policy only: %+v", onOnly)
	require.Equal(t, onOnly.On.Loss, onOnly.Loss, "on-policy only: %+v", onOnly)
	require.Len(t, o.OffAdvantages(), 0, "on-policy only: %+v", onOnly)
	offOnly, err := o.Step(tensor.Batch[float64]{}, like(make([]float64, s.off.Logp.Size()), s.off.Logp), replay.OnPolicy[float64]{}, s.off)
	require.NoError(t, err, "off-policy only: %+v", offOnly)
	require.Equal(t, 0, offOnly.On.Tokens, "off-policy only: %+v", offOnly)
	require.Equal(t, 0.6*offOnly.Off.Loss, offOnly.Loss, "off-policy only: %+v", offOnly)
	require.Len(t, o.OnAdvantages(), 0, "off-policy only: %+v", offOnly)
	_, err = o.Step(tensor.Batch[float64]{}, tensor.Batch[float64]{}, replay.OnPolicy[float64]{}, replay.OffPolicy[float64]{})
	assert.ErrorIs(t, err, tensor.ErrEmpty, "empty step")
}

func TestStepErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*step[float64], *[]float64, *[]float64)
		kind error
		arg  string
	}{
		{"rewards short", func(s *step[float64], _, _ *[]float64) { s.on.Rewards = s.on.Rewards[1:] }, tensor.ErrShape, "on-policy part: rewards"},
		{"on mask shape", func(s *step[float64], _, _ *[]float64) { s.on.Mask = tensor.MustNew[float64](1, 1) }, tensor.ErrShape, "on-policy part: mask"},
		{"on grad short", func(_ *step[float64], g, _ *[]float64) { *g = (*g)[1:] }, tensor.ErrShape, "grad"},
		{"NaN current logp", func(s *step[float64], _, _ *[]float64) { s.off.Logp.Data[len(s.off.Logp.Data)-1] = math.NaN() }, tensor.ErrNonFinite, "off-policy part"},
		{"samples short", func(s *step[float64], _, _ *[]float64) { s.off.Samples = s.off.Samples[1:] }, tensor.ErrShape, "off-policy part: samples"},
		{"behaviour count", func(s *step[float64], _, _ *[]float64) { s.off.Samples[1].Logp = s.off.Samples[1].Logp[1:] }, tensor.ErrShape, "samples[1]"},
		{"bad off mask", func(s *step[float64], _, _ *[]float64) { s.off.Mask.Data[3] = 0.5 }, tensor.ErrMask, "mask[0,3]"},
		{"NaN baseline", func(s *step[float64], _, _ *[]float64) { s.off.Samples[2].Baseline = math.NaN() }, tensor.ErrNonFinite, "baselines[2]"},
		{"Inf behaviour", func(s *step[float64], _, _ *[]float64) { s.off.Samples[0].Logp[0] = float32(math.Inf(1)) }, tensor.ErrNonFinite, "old_logp"},
		{"gradients for an empty part", func(s *step[float64], g, _ *[]float64) { s.on = replay.OnPolicy[float64]{} }, tensor.ErrShape, "on"},
		{"KL without reference", func(s *step[float64], _, _ *[]float64) {}, tensor.ErrEmpty, "ref_logp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := randomStep[float64](4, 2, 2, 3, 7, false)
			gOn, gOff := make([]float64, s.on.Logp.Size()), make([]float64, s.off.Logp.Size())
			c.f(&s, &gOn, &gOff)
			o := objective[float64](t, nil)
			if c.name == "KL without reference" {
				o = objective[float64](t, func(cfg *replay.ObjectiveConfig) { cfg.Loss = grpo.GRPOLoss() })
			}
			_, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
			require.ErrorIs(t, err, c.kind, "err naming %q", c.arg)
			assert.True(t, containsArg(err, c.arg), "err naming %q", c.arg)
		})
	}
	for _, f := range []func(*replay.ObjectiveConfig){
		func(c *replay.ObjectiveConfig) { c.Alpha = -1 },
		func(c *replay.ObjectiveConfig) { c.Alpha = 0 },
		func(c *replay.ObjectiveConfig) { *c = replay.ObjectiveConfig{} },
		func(c *replay.ObjectiveConfig) { c.Alpha = math.Inf(1) },
		func(c *replay.ObjectiveConfig) { c.TAS.Lambda = -1 },
		func(c *replay.ObjectiveConfig) { c.Off.Eps = math.NaN() },
		func(c *replay.ObjectiveConfig) { c.Group.Eps = -1 },
		func(c *replay.ObjectiveConfig) { c.Loss.ClipLow = -1 },
	} {
		cfg := replay.DefaultObjectiveConfig()
		f(&cfg)
		_, err := replay.NewObjective[float32](cfg)
		assert.Error(t, err, "config %+v accepted", cfg)
	}
}

// TestDefaultObjectiveIsThePapers: α = 0.6 and β = 0.1 (AVATAR §5).
func TestDefaultObjectiveIsThePapers(t *testing.T) {
	cfg := replay.DefaultObjectiveConfig()
	assert.Equal(t, 0.6, cfg.Alpha, "α, β, λ_TAS; want 0.6, 0.1, 0.3")
	assert.Equal(t, 0.1, cfg.Loss.KLCoef, "α, β, λ_TAS; want 0.6, 0.1, 0.3")
	assert.Equal(t, 0.3, cfg.TAS.Lambda, "α, β, λ_TAS; want 0.6, 0.1, 0.3")
	_, err := replay.NewObjective[float32](replay.ObjectiveConfig{})
	require.ErrorIs(t, err, tensor.ErrRange, "zero config, want a range error pointing to DefaultObjectiveConfig")
	assert.Contains(t, err.Error(), "DefaultObjectiveConfig", "zero config, want a range error pointing to DefaultObjectiveConfig")
}

// TestStepPassesTokenWeightsAndProx: APPO-style token weights multiply
// each token's policy loss on top of TAS, and proximal log-probs make both
// parts decoupled PPO — exactly as ppo.PolicyLoss computes them.
func TestStepPassesTokenWeightsAndProx(t *testing.T) {
	s := randomStep[float64](11, 2, 3, 3, 8, false)
	o := objective[float64](t, nil)
	gOn, gOff := make([]float64, s.on.Logp.Size()), make([]float64, s.off.Logp.Size())
	base, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
	require.NoError(t, err)
	ones := func(x tensor.Batch[float64], v float64) tensor.Batch[float64] {
		y := tensor.MustNew[float64](x.B, x.T)
		for i := range y.Data {
			y.Data[i] = v
		}
		return y
	}
	// Weights of 2 everywhere double the policy loss and its gradient.
	w := s
	w.on.TokenWeights, w.off.TokenWeights = ones(s.on.Logp, 2), ones(s.off.Logp, 2)
	g2On, g2Off := make([]float64, len(gOn)), make([]float64, len(gOff))
	res, err := o.Step(like(g2On, w.on.Logp), like(g2Off, w.off.Logp), w.on, w.off)
	require.NoError(t, err)
	if math.Abs(res.Loss-2*base.Loss) > 1e-12*math.Max(1, math.Abs(base.Loss)) {
		t.Errorf("loss with weights 2: %v, want 2·%v", res.Loss, base.Loss)
	}
	for i := range gOff {
		if math.Abs(g2Off[i]-2*gOff[i]) > 1e-12 {
			t.Fatalf("off grad[%d] = %v, want 2·%v", i, g2Off[i], gOff[i])
		}
	}
	// A proximal policy equal to the current one: ratio 1, behaviour
	// weights π_θ/π_old; the parts report them.
	p := s
	p.on.ProxLogp, p.off.ProxLogp = s.on.Logp, s.off.Logp
	res, err = o.Step(like(g2On, p.on.Logp), like(g2Off, p.off.Logp), p.on, p.off)
	require.NoError(t, err)
	if res.On.MeanRatio != 1 || res.Off.MeanRatio != 1 || res.Off.MeanBehaveWeight == 1 {
		t.Errorf("decoupled: mean ratios %v, %v, behaviour weight %v; want 1, 1, ≠ 1",
			res.On.MeanRatio, res.Off.MeanRatio, res.Off.MeanBehaveWeight)
	}
}

// TestStepAllocatesNothing: a warm Objective allocates nothing per step.
func TestStepAllocatesNothing(t *testing.T) {
	s := randomStep[float32](6, 4, 4, 16, 64, false)
	o := objective[float32](t, nil)
	gOn, gOff := make([]float32, s.on.Logp.Size()), make([]float32, s.off.Logp.Size())
	run := func() {
		_, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
		require.NoError(t, err)
	}
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per step", n)
	}
}

// TestFreshOnlyKL: by default Eq. 2's KL term is taken on both parts, as
// Eq. 3 gives J_off Eq. 2's form, so the replayed part needs reference
// log-probs; with the FreshOnlyKL guard it needs none and its loss has no KL.
func TestFreshOnlyKL(t *testing.T) {
	s := randomStep[float64](12, 2, 3, 3, 8, true)
	gOn, gOff := make([]float64, s.on.Logp.Size()), make([]float64, s.off.Logp.Size())
	o := objective[float64](t, func(c *replay.ObjectiveConfig) { c.Loss.KLCoef = 0.1 })
	res, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
	require.NoError(t, err)
	if res.On.KLLoss == 0 || res.Off.KLLoss == 0 {
		t.Errorf("default: on KL loss %v, off KL loss %v; want both ≠ 0", res.On.KLLoss, res.Off.KLLoss)
	}
	noRef := s.off
	noRef.RefLogp = tensor.Batch[float64]{}
	_, err = o.Step(like(gOn, s.on.Logp), like(gOff, noRef.Logp), s.on, noRef)
	assert.ErrorIs(t, err, tensor.ErrEmpty, "default without off-policy reference")
	o = objective[float64](t, func(c *replay.ObjectiveConfig) { c.Loss.KLCoef, c.FreshOnlyKL = 0.1, true })
	if res, err = o.Step(like(gOn, s.on.Logp), like(gOff, noRef.Logp), s.on, noRef); err != nil || res.Off.KLLoss != 0 || res.On.KLLoss == 0 {
		t.Errorf("FreshOnlyKL: on KL loss %v, off KL loss %v, %v; want ≠ 0 and 0", res.On.KLLoss, res.Off.KLLoss, err)
	}
	// A reference the guard would leave unread is refused, as ppo refuses
	// RefLogp with KLCoef 0.
	_, err = o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off)
	require.ErrorIs(t, err, tensor.ErrRange, "FreshOnlyKL with an off-policy reference")
	assert.Contains(t, err.Error(), "off.RefLogp")
}

// like wraps a flat gradient slice as a batch of x's shape.
func like[F tensor.Float](g []F, x tensor.Batch[F]) tensor.Batch[F] {
	return tensor.Batch[F]{Shape: x.Shape, Data: g}
}
