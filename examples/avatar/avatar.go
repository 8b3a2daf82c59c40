package main

import (
	"fmt"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// avatarMethod is AVATAR (Algorithm 1) or one of its ablations. Each step,
// for each prompt: OnPolicy fresh responses, and OffPolicy replayed ones
// drawn from the stratified buffer for that same prompt (falling back to
// the curriculum's tier draw while the prompt has too few stored); the
// loss on both parts with TAS-shaped advantages — group advantages (Eq. 1)
// for the fresh part, (R − R̄(q))/σ_off (Eq. 11, floored) for the replayed
// part, each replayed response's own behaviour log-probabilities in its
// ratio (Eq. 4) — added as J_on + α·J_off (Eq. 3) with AVATAR's α = 0.6,
// β = 0.1, λ_TAS = 0.3. The fresh responses then join the buffer, which
// updates the VCRS.
type avatarMethod struct {
	name       string
	replay     bool // draw replayed responses at all
	vcrs       bool // Eq. 11's baseline R̄(q); else the replayed group's mean
	buf        *replay.Buffer
	obj        *replay.Objective[float64]
	curriculum replay.Curriculum
	sampled    []replay.Sampled
	step       int
}

// avatarVariant names AVATAR and its ablations.
type avatarVariant struct {
	name              string
	tas, vcrs, replay bool
}

var (
	avatarFull     = avatarVariant{"avatar", true, true, true}
	avatarNoTAS    = avatarVariant{"avatar_no_tas", false, true, true}
	avatarNoVCRS   = avatarVariant{"avatar_no_vcrs", true, false, true}
	avatarNoReplay = avatarVariant{"avatar_no_replay", true, true, false}
)

func newAvatarMethod(v avatarVariant) (*avatarMethod, error) {
	buf, err := replay.New(replay.DefaultConfig())
	if err != nil {
		return nil, err
	}
	cfg := replay.DefaultObjectiveConfig()
	if !v.tas {
		cfg.TAS = tas.Config{Shape: tas.Uniform}
	}
	obj, err := replay.NewObjective[float64](cfg)
	if err != nil {
		return nil, err
	}
	return &avatarMethod{name: v.name, replay: v.replay, vcrs: v.vcrs, buf: buf, obj: obj, curriculum: replay.DefaultCurriculum()}, nil
}

func (m *avatarMethod) Name() string { return m.name }

func (m *avatarMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	m.step++
	var st stepStats
	var on []*Completion
	var prompts []Prompt
	ids := make([]uint64, 0, set.PromptsPerStep*set.OnPolicy)
	for range set.PromptsPerStep {
		p := r.nextPrompt()
		g, err := r.generate(p, set.OnPolicy)
		if err != nil {
			return st, err
		}
		st.count(p, g)
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
	var res replay.StepResult
	a := r.agent
	g := a.Model.NewGrads()
	gradOn, gradOff := tensor.MustNew[float64](len(on), maxLen), tensor.MustNew[float64](len(off), maxLen)
	sOn, sOff := a.prepare(on, true), a.prepare(off, true)
	for range set.Epochs {
		bOn, bOff := a.forward(sOn), a.forward(sOff)
		res, err = m.obj.Step(gradOn, gradOff,
			replay.OnPolicy[float64]{Logp: bOn.Logp, OldLogp: bOn.Old, Mask: bOn.Mask, RefLogp: bOn.Ref,
				Rewards: rewards, Groups: grpo.Contiguous(set.OnPolicy), Prompts: ids},
			replay.OffPolicy[float64]{Logp: bOff.Logp, Mask: bOff.Mask, RefLogp: bOff.Ref, Samples: samples})
		if err != nil {
			return st, err
		}
		g.Zero()
		a.backward(g, bOn, gradOn.Data, 1)
		a.backward(g, bOff, gradOff.Data, 1) // α is already in gradOff
		a.Opt.Step(a.Model, g)
	}
	a.Version++
	st.Rescued = res.Rescued // of the last epoch; every epoch sees the same advantages

	for k := range prompts {
		es := make([]replay.Experience, set.OnPolicy)
		for i := range es {
			es[i] = toExperience(on[k*set.OnPolicy+i])
		}
		if err := m.buf.AddGroup(nil, es); err != nil {
			return st, err
		}
	}
	if err := m.buf.SetVersion(int64(a.Version)); err != nil {
		return st, err
	}
	bs := m.buf.Stats()
	st.Reward = meanReward(on)
	st.Tiers = fmt.Sprintf("  tiers easy/medium/hard %d/%d/%d", bs.Len[replay.Easy], bs.Len[replay.Medium], bs.Len[replay.Hard])
	return st, nil
}

// draw samples OffPolicy replayed responses for each prompt of the step.
func (m *avatarMethod) draw(r *runner, prompts []Prompt) ([]replay.Sampled, []*Completion, error) {
	if !m.replay {
		return nil, nil, nil
	}
	set := r.set
	weights, err := m.curriculum.Weights(float64(m.step-1) / float64(set.Steps))
	if err != nil {
		return nil, nil, err
	}
	k := set.OffPolicy
	if need := len(prompts) * k; cap(m.sampled) < need {
		m.sampled = make([]replay.Sampled, need)
	}
	var samples []replay.Sampled
	for _, p := range prompts {
		dst := m.sampled[len(samples) : len(samples)+k]
		n, err := m.buf.Sample(dst, r.rng, replay.SampleOptions{Weights: weights, ForPrompt: true, Prompt: p.ID()})
		if err != nil {
			return nil, nil, err
		}
		if !m.vcrs && n > 0 {
			// The ablation: the replayed group's own mean reward as the
			// baseline, as GRPO's Eq. 1 would take it, instead of R̄(q).
			var mean float64
			for _, s := range dst[:n] {
				mean += s.Reward
			}
			mean /= float64(n)
			for i := range dst[:n] {
				dst[i].Baseline = mean
			}
		}
		samples = m.sampled[:len(samples)+n]
	}
	off := make([]*Completion, len(samples))
	for i, s := range samples {
		if off[i], err = fromExperience(s.Experience, r.prompts); err != nil {
			return nil, nil, err
		}
	}
	return samples, off, nil
}

// toExperience stores a completion; its prompt is the experience's id.
func toExperience(c *Completion) replay.Experience {
	e := replay.Experience{Prompt: c.Prompt.ID(), Reward: c.Reward, Version: int64(c.Version),
		Tokens: make([]int32, len(c.Tokens)), Logp: make([]float32, len(c.Logp))}
	for i, t := range c.Tokens {
		e.Tokens[i] = int32(t)
	}
	for i, l := range c.Logp {
		e.Logp[i] = float32(l)
	}
	return e
}

// fromExperience rebuilds a replayed completion of one of prompts.
func fromExperience(e replay.Experience, prompts []Prompt) (*Completion, error) {
	i := int(e.Prompt) - 1
	if i < 0 || i >= len(prompts) || len(e.Tokens) != len(e.Logp) {
		return nil, fmt.Errorf("replayed experience of prompt %d is malformed", e.Prompt)
	}
	c := &Completion{Prompt: prompts[i], Reward: e.Reward, Version: int(e.Version), Tokens: make([]int, len(e.Tokens)), Logp: make([]float64, len(e.Logp))}
	for i, t := range e.Tokens {
		c.Tokens[i] = int(t)
	}
	for i, l := range e.Logp {
		c.Logp[i] = float64(l)
	}
	return c, nil
}
