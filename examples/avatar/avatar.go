package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/presets"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// avatarMethod is AVATAR (Algorithm 1) as the paper runs it, or one of its
// ablations. Each step: K_on fresh responses to each of the step's
// prompts; K_off replayed responses per prompt drawn from the stratified
// buffer across prompts, tier by tier under the easy→hard curriculum
// (replay.DefaultCurriculum); the loss J_on + α·J_off (Eq. 3) from
// presets.AVATAR — group advantages (Eq. 1) on the fresh part,
// (R − R̄(q))/σ_off (Eq. 11, no floor) on the replayed part with each
// response's own behaviour log-probabilities in its ratio (Eq. 4), both
// TAS-shaped, β·KL on both parts. Then the fresh responses join the buffer
// (updating the VCRS) and prompts that stay hard while the policy stops
// moving on them get a hint (§4.1).
type avatarMethod struct {
	v          avatarVariant
	buf        *replay.Buffer
	obj        *replay.Objective[float64]
	hinter     *replay.Hinter
	hinted     map[uint64]int // prompt → the method its hint names
	curriculum replay.Curriculum
	window     map[uint64]*window // per prompt, the last W fresh (format, acc), for the diagnostics
	sampled    []replay.Sampled
	diag       diagState
}

// avatarVariant names AVATAR and its ablations.
type avatarVariant struct {
	name                             string
	tas, vcrs, replay, hint, perStep bool
	buffer                           int  // capacity; 0: the settings'
	guards                           bool // replay's two guards on: StdFloor and FreshOnlyKL
}

// The runs: AVATAR and one ablation per component. perStep false is the
// per-prompt draw (SampleOptions.ForPrompt), the old example's.
var avatarVariants = []avatarVariant{
	{name: "avatar", tas: true, vcrs: true, replay: true, hint: true, perStep: true},
	{name: "avatar_no_tas", vcrs: true, replay: true, hint: true, perStep: true},
	{name: "avatar_no_vcrs", tas: true, replay: true, hint: true, perStep: true},
	{name: "avatar_no_replay", tas: true, vcrs: true, hint: true, perStep: true},
	{name: "avatar_no_hint", tas: true, vcrs: true, replay: true, perStep: true},
	{name: "avatar_per_prompt", tas: true, vcrs: true, replay: true, hint: true},
}

// avatarGuarded is AVATAR with the guards the paper lacks (σ_off floored
// at replay.DefaultStdFloor, the KL on the fresh part only): not in the
// default runs, added after the full run had been seen (docs/avatar.md);
// -runs avatar_guarded runs it.
var avatarGuarded = avatarVariant{name: "avatar_guarded", tas: true, vcrs: true, replay: true, hint: true, perStep: true, guards: true}

// bufferSweep are the capacities of the Fig. 11 sweep besides the default.
var bufferSweep = []int{250, 1000, 4000}

func sweepVariant(capacity int) avatarVariant {
	v := avatarVariants[0]
	v.name, v.buffer = fmt.Sprintf("avatar_buf_%d", capacity), capacity
	return v
}

// hintConfig is the hint trigger of the runs. The paper states no
// thresholds. Below: rewards here are ≥ 0.5 for every well-formed response
// (0.5·R_format), so replay.DefaultHintConfig's 0.2 would never fire; 0.65
// is a mean rMAE under 0.3. MinRewards 4, one group: a training prompt
// comes back 0.4 times per run on average, so the full window W = 20 is
// almost never reached (8, two groups, was tried first: one hint per run).
func hintConfig() replay.HintConfig {
	c := presets.AVATAR().Hint
	c.Below, c.MinRewards = 0.65, 4
	return c
}

func newAvatarMethod(v avatarVariant, set Settings) (*avatarMethod, error) {
	p := presets.AVATAR()
	bc := p.Buffer
	bc.Capacity, bc.MaxStaleness = set.Buffer, set.MaxStaleness
	if v.buffer > 0 {
		bc.Capacity = v.buffer
	}
	buf, err := replay.New(bc)
	if err != nil {
		return nil, err
	}
	cfg := p.Objective
	if !v.tas {
		cfg.TAS = tas.Config{Shape: tas.Uniform}
	}
	if v.guards {
		cfg.Off.StdFloor, cfg.FreshOnlyKL = replay.DefaultStdFloor, true
	}
	obj, err := replay.NewObjective[float64](cfg)
	if err != nil {
		return nil, err
	}
	m := &avatarMethod{v: v, buf: buf, obj: obj, hinted: map[uint64]int{}, curriculum: replay.DefaultCurriculum(),
		window: map[uint64]*window{}}
	if v.hint {
		// The pre-computed hint names the skill's method — "first locate
		// the object making the sound, then count" of §4.1, for this task.
		m.hinter, err = replay.NewHinter(buf, hintConfig(), replay.HintFunc(func(context.Context, uint64) (string, error) {
			return "use the skill's method", nil
		}))
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *avatarMethod) Name() string { return m.v.name }

func (m *avatarMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	var st stepStats
	var on []*Completion
	var prompts []Prompt
	ids := make([]uint64, 0, set.PromptsPerStep*set.OnPolicy)
	for range set.PromptsPerStep {
		p := r.nextPrompt()
		hint, ok := m.hinted[p.ID()]
		if !ok {
			hint = -1
		}
		g, err := r.generate(p, hint, set.OnPolicy)
		if err != nil {
			return st, err
		}
		st.count(g)
		on = append(on, g...)
		prompts = append(prompts, p)
		for range g {
			ids = append(ids, p.ID())
		}
	}
	samples, off, err := m.draw(r, prompts)
	if err != nil {
		return st, err
	}

	rewards := make([]float64, len(on))
	for i, c := range on {
		rewards[i] = c.Reward
	}
	a := r.agent
	g := a.Model.NewGrads()
	gradOn, gradOff := tensor.MustNew[float64](len(on), maxLen), tensor.MustNew[float64](len(off), maxLen)
	sOn, sOff := a.prepare(on, true), a.prepare(off, true)
	bOn, bOff := a.forward(sOn), a.forward(sOff)
	offRef := bOff.Ref
	if m.obj.Config().FreshOnlyKL {
		offRef = tensor.Batch[float64]{} // the guard takes no KL on the replayed part
	}
	res, err := m.obj.Step(gradOn, gradOff,
		replay.OnPolicy[float64]{Logp: bOn.Logp, OldLogp: bOn.Old, Mask: bOn.Mask, RefLogp: bOn.Ref,
			Rewards: rewards, Groups: grpo.Contiguous(set.OnPolicy), Prompts: ids},
		replay.OffPolicy[float64]{Logp: bOff.Logp, Mask: bOff.Mask, RefLogp: offRef, Samples: samples})
	if err != nil {
		return st, err
	}
	m.diag.observe(m, res, samples, bOff)
	g.Zero()
	a.backward(g, bOn, gradOn.Data, 1)
	a.backward(g, bOff, gradOff.Data, 1) // α is already in gradOff
	a.Opt.Step(a.Model, g)
	a.Version++

	for k, p := range prompts {
		group := on[k*set.OnPolicy : (k+1)*set.OnPolicy]
		es := make([]replay.Experience, len(group))
		for i, c := range group {
			es[i] = toExperience(c)
			m.windowOf(p.ID()).add(c.Format, c.Accuracy)
		}
		if err := m.buf.AddGroup(nil, es); err != nil {
			return st, err
		}
	}
	if err := m.buf.SetVersion(int64(a.Version)); err != nil {
		return st, err
	}
	if err := m.hint(r, prompts, on); err != nil {
		return st, err
	}
	if r.step%set.EvalEvery == 0 {
		bs := m.buf.Stats()
		m.diag.tiers = append(m.diag.tiers, TierPoint{Step: r.step, Len: bs.Len})
	}
	return st, nil
}

// draw samples K_off replayed responses per prompt of the step: across
// prompts, tier-weighted by the curriculum (AVATAR), or for each prompt
// from its own past responses first (the per-prompt ablation).
func (m *avatarMethod) draw(r *runner, prompts []Prompt) ([]replay.Sampled, []*Completion, error) {
	if !m.v.replay {
		return nil, nil, nil
	}
	set := r.set
	weights, err := m.curriculum.Weights(float64(r.step-1) / float64(set.Steps))
	if err != nil {
		return nil, nil, err
	}
	need := len(prompts) * set.OffPolicy
	if cap(m.sampled) < need {
		m.sampled = make([]replay.Sampled, need)
	}
	var samples []replay.Sampled
	if m.v.perStep {
		n, err := m.buf.Sample(m.sampled[:need], r.rng, replay.SampleOptions{Weights: weights})
		if err != nil {
			return nil, nil, err
		}
		samples = m.sampled[:n]
		if !m.v.vcrs {
			meanBaseline(samples)
		}
	} else {
		for _, p := range prompts {
			dst := m.sampled[len(samples) : len(samples)+set.OffPolicy]
			n, err := m.buf.Sample(dst, r.rng, replay.SampleOptions{Weights: weights, ForPrompt: true, Prompt: p.ID()})
			if err != nil {
				return nil, nil, err
			}
			if !m.v.vcrs {
				meanBaseline(dst[:n])
			}
			samples = m.sampled[:len(samples)+n]
		}
	}
	off := make([]*Completion, len(samples))
	for i, s := range samples {
		if off[i], err = fromExperience(s.Experience, r.train); err != nil {
			return nil, nil, err
		}
	}
	return samples, off, nil
}

// meanBaseline is the no-VCRS ablation: the replayed batch's own mean
// reward as the baseline, as GRPO's μ_R would be, instead of R̄(q).
func meanBaseline(s []replay.Sampled) {
	if len(s) == 0 {
		return
	}
	var mean float64
	for _, x := range s {
		mean += x.Reward
	}
	mean /= float64(len(s))
	for i := range s {
		s[i].Baseline = mean
	}
}

// hint gives a hint to each prompt of the step that stays hard — R̄(q)
// below the trigger over enough rewards — while the update moved the
// policy little on it: KL(π_θ‖π_θold) over its fresh responses, estimated
// after the update, below the trigger (replay.Hinter, §4.1). A hinted
// prompt carries the hint in every later generation.
func (m *avatarMethod) hint(r *runner, prompts []Prompt, on []*Completion) error {
	if m.hinter == nil {
		return nil
	}
	cfg := hintConfig()
	for k, p := range prompts {
		id := p.ID()
		if _, done := m.hinted[id]; done {
			continue
		}
		mean, n, ok := m.buf.Baseline(id)
		if !ok || n < cfg.MinRewards || mean >= cfg.Below {
			continue // only the candidates pay for the KL estimate
		}
		kl := r.agent.klToBehaviour(on[k*r.set.OnPolicy : (k+1)*r.set.OnPolicy])
		_, ok, err := m.hinter.Hint(context.Background(), id, kl)
		if err != nil {
			return err
		}
		if ok {
			m.hinted[id] = r.world.SkillMethod[p.Skill]
			m.diag.hints++
		}
	}
	return nil
}

// window is a ring of a prompt's last W fresh (format, accuracy) pairs:
// the two halves of R̄(q), for the diagnostics.
type window struct {
	f, a []float64
	next int
}

func (m *avatarMethod) windowOf(id uint64) *window {
	w := m.window[id]
	if w == nil {
		w = &window{}
		m.window[id] = w
	}
	return w
}

func (w *window) add(f, a float64) {
	if len(w.f) < replay.DefaultWindow {
		w.f, w.a = append(w.f, f), append(w.a, a)
		return
	}
	w.f[w.next], w.a[w.next] = f, a
	w.next = (w.next + 1) % replay.DefaultWindow
}

func (w *window) means() (f, a float64) {
	for i := range w.f {
		f += w.f[i]
		a += w.a[i]
	}
	n := float64(max(len(w.f), 1))
	return f / n, a / n
}

// toExperience stores a completion; its prompt is the experience's id, and
// the payload keeps its format and accuracy rewards and its hint.
func toExperience(c *Completion) replay.Experience {
	e := replay.Experience{Prompt: c.Prompt.ID(), Reward: c.Reward, Version: int64(c.Version),
		Tokens: make([]int32, len(c.Tokens)), Logp: make([]float32, len(c.Logp)), Payload: make([]byte, 17)}
	for i, t := range c.Tokens {
		e.Tokens[i] = int32(t)
	}
	for i, l := range c.Logp {
		e.Logp[i] = float32(l)
	}
	binary.LittleEndian.PutUint64(e.Payload, math.Float64bits(c.Format))
	binary.LittleEndian.PutUint64(e.Payload[8:], math.Float64bits(c.Accuracy))
	e.Payload[16] = byte(c.Hint + 1)
	return e
}

// fromExperience rebuilds a replayed completion of one of the prompts.
func fromExperience(e replay.Experience, prompts []Prompt) (*Completion, error) {
	i := int(e.Prompt) - 1
	if i < 0 || i >= len(prompts) || len(e.Tokens) != len(e.Logp) || len(e.Payload) != 17 {
		return nil, fmt.Errorf("replayed experience of prompt %d is malformed", e.Prompt)
	}
	c := &Completion{Prompt: prompts[i], Reward: e.Reward, Version: int(e.Version), Tokens: make([]int, len(e.Tokens)), Logp: make([]float64, len(e.Logp)),
		Format:   math.Float64frombits(binary.LittleEndian.Uint64(e.Payload)),
		Accuracy: math.Float64frombits(binary.LittleEndian.Uint64(e.Payload[8:])),
		Hint:     int(e.Payload[16]) - 1}
	for i, t := range e.Tokens {
		c.Tokens[i] = int(t)
	}
	for i, l := range e.Logp {
		c.Logp[i] = float64(l)
	}
	c.Exact = c.Accuracy == 1
	return c, nil
}

// TierPoint is the buffer's occupancy at one step.
type TierPoint struct {
	Step int
	Len  [replay.NumTiers]int
}

// Diagnostics are what a researcher needs to see why replay helps or not.
type Diagnostics struct {
	// AccShare is the share of the replayed advantage's magnitude that
	// comes from accuracy rather than format: Eq. 11's R − R̄(q) split as
	// 0.5·(acc − mean acc) + 0.5·(format − mean format) over the prompt's
	// last W fresh responses, Σ|acc part| / (Σ|acc part| + Σ|format part|).
	AccShare float64
	// PosWrong is the fraction of the replayed responses that are not an
	// exact match yet got a positive Eq. 11 advantage.
	PosWrong float64
	// Age and Ratio are the 10th, 50th and 90th percentiles of the replayed
	// responses' age (policy versions) and of their importance ratio
	// π_θ/π_θoff (Eq. 4; the geometric mean over the response's tokens).
	Age, Ratio [3]float64
	// MaxAbsAdv is the largest |A_off| seen, MinStd the smallest σ_off of
	// a replayed batch: Eq. 11 has no floor in the paper's preset.
	MaxAbsAdv, MinStd float64
	// Rescued of Vanished fresh groups got a non-zero replayed advantage
	// on their own prompt in the same step (replay.StepResult.Rescued).
	Rescued, Vanished int
	// Hints given; Tiers is the buffer's occupancy over time.
	Hints int
	Tiers []TierPoint
}

type diagState struct {
	accAbs, fmtAbs float64
	replayed, pw   int
	ages, ratios   []float64
	maxAbs, minStd float64
	rescued, van   int
	hints          int
	tiers          []TierPoint
}

func (d *diagState) observe(m *avatarMethod, res replay.StepResult, samples []replay.Sampled, b *forwardBatch) {
	d.rescued += res.Rescued
	d.van += res.Vanishing
	if len(samples) == 0 {
		return
	}
	if d.replayed == 0 || res.OffAdvantages.Std < d.minStd {
		d.minStd = res.OffAdvantages.Std
	}
	adv := m.obj.OffAdvantages()
	for i, s := range samples {
		d.replayed++
		d.ages = append(d.ages, float64(s.Age))
		c := b.Completions[i]
		mf, ma := m.windowOf(s.Prompt).means()
		d.accAbs += math.Abs(0.5 * (c.Accuracy - ma))
		d.fmtAbs += math.Abs(0.5 * (c.Format - mf))
		if adv[i] > 0 && !c.Exact {
			d.pw++
		}
		d.maxAbs = max(d.maxAbs, math.Abs(adv[i]))
		var lr float64
		for t := range c.Tokens {
			lr += b.Logp.Data[i*maxLen+t] - c.Logp[t]
		}
		d.ratios = append(d.ratios, math.Exp(lr/float64(len(c.Tokens))))
	}
}

func (d *diagState) finish() *Diagnostics {
	out := &Diagnostics{AccShare: frac64(d.accAbs, d.accAbs+d.fmtAbs), PosWrong: frac(d.pw, d.replayed),
		MaxAbsAdv: d.maxAbs, MinStd: d.minStd, Rescued: d.rescued, Vanished: d.van, Hints: d.hints, Tiers: d.tiers}
	out.Age, out.Ratio = quantiles(d.ages), quantiles(d.ratios)
	return out
}

func frac64(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// quantiles returns the 10th, 50th and 90th percentiles of x (nearest
// rank), zeros when x is empty.
func quantiles(x []float64) [3]float64 {
	var q [3]float64
	if len(x) == 0 {
		return q
	}
	s := slices.Clone(x)
	slices.Sort(s)
	for i, p := range []float64{0.1, 0.5, 0.9} {
		q[i] = s[min(len(s)-1, int(p*float64(len(s))))]
	}
	return q
}
