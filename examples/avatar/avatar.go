package main

import (
	"fmt"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/replay"
)

// avatarMethod is AVATAR (Algorithm 1): each step K_on fresh responses per
// prompt and K_off replayed ones drawn from the stratified buffer by the
// curriculum, the GRPO loss on both parts with TAS-shaped advantages — group
// advantages (Eq. 1) for the fresh part, (R − R̄(q))/σ_off (Eq. 11) for the
// replayed part, each replayed response's own behaviour log-probabilities
// in its ratio (Eq. 4) — added as J_on + α·J_off (Eq. 3). The fresh
// responses then join the buffer, which updates the VCRS.
type avatarMethod struct {
	buf        *replay.Buffer
	obj        *replay.Objective[float64]
	curriculum replay.Curriculum
	sampled    []replay.Sampled
	step       int
}

func newAvatarMethod() (*avatarMethod, error) {
	buf, err := replay.New(replay.DefaultConfig())
	if err != nil {
		return nil, err
	}
	cfg := replay.DefaultObjectiveConfig()
	cfg.Loss = grpo.GRPOLoss() // the same loss as the GRPO run: the comparison isolates replay and TAS
	obj, err := replay.NewObjective[float64](cfg)
	if err != nil {
		return nil, err
	}
	return &avatarMethod{buf: buf, obj: obj, curriculum: replay.DefaultCurriculum()}, nil
}

func (*avatarMethod) Name() string { return "avatar" }

func (m *avatarMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	m.step++
	var on []*Completion
	for range set.PromptsPerStep {
		g, err := r.generate(r.nextPrompt(), set.OnPolicy)
		if err != nil {
			return stepStats{}, err
		}
		on = append(on, g...)
	}
	weights, err := m.curriculum.Weights(float64(m.step-1) / float64(set.Steps))
	if err != nil {
		return stepStats{}, err
	}
	if cap(m.sampled) < set.PromptsPerStep*set.OffPolicy {
		m.sampled = make([]replay.Sampled, set.PromptsPerStep*set.OffPolicy)
	}
	n, err := m.buf.Sample(m.sampled[:set.PromptsPerStep*set.OffPolicy], r.rng, replay.SampleOptions{Weights: weights})
	if err != nil {
		return stepStats{}, err
	}
	samples := m.sampled[:n]
	off := make([]*Completion, n)
	for i, s := range samples {
		if off[i], err = fromExperience(s.Experience); err != nil {
			return stepStats{}, err
		}
	}

	rewards := make([]float64, len(on))
	for i, c := range on {
		rewards[i] = c.Reward
	}
	var res replay.StepResult
	a := r.agent
	g := a.Model.NewGrads()
	gradOn, gradOff := make([]float64, len(on)*maxLen), make([]float64, n*maxLen)
	sOn, sOff := a.prepare(on, true), a.prepare(off, true)
	for range set.Epochs {
		bOn, bOff := a.forward(sOn), a.forward(sOff)
		res, err = m.obj.Step(gradOn, gradOff,
			replay.OnPolicy[float64]{Logp: bOn.Logp, OldLogp: bOn.Old, Mask: bOn.Mask, RefLogp: bOn.Ref,
				Rewards: rewards, Groups: grpo.Contiguous(set.OnPolicy)},
			replay.OffPolicy[float64]{Logp: bOff.Logp, Mask: bOff.Mask, RefLogp: bOff.Ref, Samples: samples})
		if err != nil {
			return stepStats{}, err
		}
		g.Zero()
		a.backward(g, bOn, gradOn, 1)
		a.backward(g, bOff, gradOff, 1) // α is already in gradOff
		a.Opt.Step(a.Model, g)
	}
	a.Version++

	es := make([]replay.Experience, len(on))
	for i, c := range on {
		es[i] = toExperience(c)
	}
	if err := m.buf.AddGroup(make([]replay.Receipt, len(es)), es); err != nil {
		return stepStats{}, err
	}
	if err := m.buf.SetVersion(int64(a.Version)); err != nil {
		return stepStats{}, err
	}
	st := m.buf.Stats()
	groups := float64(len(on) / set.OnPolicy)
	out := stepStats{
		Reward:  meanReward(on),
		ZeroAdv: float64(res.Vanishing) / groups,
		Tiers:   fmt.Sprintf("  tiers easy/medium/hard %d/%d/%d", st.Len[replay.Easy], st.Len[replay.Medium], st.Len[replay.Hard]),
	}
	if res.Vanishing > 0 {
		out.Rescued = float64(res.Rescued) / float64(res.Vanishing)
	}
	return out, nil
}

// toExperience stores a completion with its prompt as the payload.
func toExperience(c *Completion) replay.Experience {
	e := replay.Experience{Prompt: c.Prompt.ID(), Reward: c.Reward, Version: int64(c.Version),
		Tokens: make([]int32, len(c.Tokens)), Logp: make([]float32, len(c.Logp)),
		Payload: []byte{byte(c.Prompt.Digits[0]), byte(c.Prompt.Digits[1]), byte(c.Prompt.Digits[2]), byte(c.Prompt.Digits[3]), byte(c.Prompt.Query)}}
	for i, t := range c.Tokens {
		e.Tokens[i] = int32(t)
	}
	for i, l := range c.Logp {
		e.Logp[i] = float32(l)
	}
	return e
}

// fromExperience rebuilds a replayed completion.
func fromExperience(e replay.Experience) (*Completion, error) {
	if len(e.Payload) != 5 || len(e.Tokens) != len(e.Logp) {
		return nil, fmt.Errorf("replayed experience of prompt %d is malformed", e.Prompt)
	}
	c := &Completion{Reward: e.Reward, Version: int(e.Version), Tokens: make([]int, len(e.Tokens)), Logp: make([]float64, len(e.Logp))}
	for i := range 4 {
		c.Prompt.Digits[i] = int(e.Payload[i])
	}
	c.Prompt.Query = int(e.Payload[4])
	for i, t := range e.Tokens {
		c.Tokens[i] = int(t)
	}
	for i, l := range e.Logp {
		c.Logp[i] = float64(l)
	}
	return c, nil
}
