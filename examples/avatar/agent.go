package main

import (
	"math"
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// Completion is one generated response and everything training needs of
// it.
type Completion struct {
	Prompt Prompt
	Tokens []int
	// Logp holds log π_behaviour(token) at generation time, the old
	// log-probabilities of the importance ratio.
	Logp []float64
	// Reward, Accuracy (rMAE, Eq. 8) and Format (Eq. 7) are the scored
	// components; Exact is an exact match.
	Reward, Accuracy, Format float64
	Exact                    bool
	// Hint is the method a hint named when the response was generated,
	// −1 for none.
	Hint int
	// Version is the number of policy updates before generation.
	Version int
	// passes are the forward passes of a sampled (not greedy) generation,
	// which the update at the same version reuses instead of recomputing.
	passes []*policy.Pass
}

// Agent holds a policy, its frozen reference and its optimiser.
type Agent struct {
	Model, Ref *policy.Model
	Opt        *policy.Adam
	Version    int
	rng        *rand.Rand

	pass    *policy.Pass
	feats   []int
	scratch []float64
}

func newAgent(m *policy.Model, lr float64, seed uint64) *Agent {
	return &Agent{Model: m, Ref: m.Clone(), Opt: policy.NewAdam(m, lr), rng: rand.New(rand.NewPCG(seed, 99)),
		pass: m.NewPass(), scratch: make([]float64, vocab)}
}

// Generate samples a response to p (or decodes greedily), with the hint
// naming method hint (−1: none).
func (a *Agent) Generate(p Prompt, hint int, greedy bool) *Completion {
	c := &Completion{Prompt: p, Hint: hint, Version: a.Version}
	for len(c.Tokens) < maxLen {
		a.feats = features(a.feats, p, hint, c.Tokens)
		pass := a.pass
		if !greedy {
			pass = a.Model.NewPass()
			c.passes = append(c.passes, pass)
		}
		a.Model.Forward(pass, a.feats)
		t := pass.Sample(a.rng)
		if greedy {
			t = pass.Argmax()
		}
		c.Tokens = append(c.Tokens, t)
		c.Logp = append(c.Logp, math.Log(pass.P[t]))
		if t == tokEOS {
			break
		}
	}
	return c
}

// Part is a set of completions trained with one loss configuration and
// weight: the on-policy part, or the replayed part of AVATAR's hybrid
// objective (Eq. 3: J = J_on + α·J_off).
type Part struct {
	Completions []*Completion
	// Advantages per completion and token (TAS-shaped where used).
	Advantages [][]float64
	Weight     float64
}

// Update takes epochs gradient steps on the loss Σ_part weight·L_part(θ),
// each L a ppo.PolicyLoss over the part's completions with old
// log-probabilities from generation time. It returns the last step's
// statistics of the first part.
func (a *Agent) Update(parts []Part, cfg ppo.Config, epochs int) (ppo.Result, error) {
	steps := make([]*stepBatch, len(parts))
	for k, part := range parts {
		steps[k] = a.prepare(part.Completions, cfg.KLCoef > 0)
	}
	g := a.Model.NewGrads()
	var first ppo.Result
	for range epochs {
		g.Zero()
		for k, part := range parts {
			res, err := a.accumulate(g, part, steps[k], cfg)
			if err != nil {
				return first, err
			}
			if k == 0 {
				first = res
			}
		}
		a.Opt.Step(a.Model, g)
		for _, s := range steps {
			for _, c := range s.Completions {
				c.passes = nil // the policy moved: the next epoch recomputes
			}
		}
	}
	a.Version++
	return first, nil
}

// accumulate adds weight·dL/dθ of one part, laid out in s, to g.
func (a *Agent) accumulate(g *policy.Grads, part Part, s *stepBatch, cfg ppo.Config) (ppo.Result, error) {
	n := len(part.Completions)
	if n == 0 {
		return ppo.Result{}, nil
	}
	b := a.forward(s)
	adv := tensor.MustNew[float64](n, maxLen)
	for i, c := range part.Completions {
		copy(adv.Row(i), part.Advantages[i][:len(c.Tokens)])
	}
	grad := tensor.MustNew[float64](n, maxLen)
	res, err := ppo.PolicyLoss(grad, ppo.Inputs[float64]{Logp: b.Logp, OldLogp: s.Old, Advantages: adv, Mask: s.Mask, RefLogp: s.Ref}, cfg)
	if err != nil {
		return res, err
	}
	a.backward(g, b, grad.Data, part.Weight)
	return res, nil
}

// stepBatch is a set of completions laid out as [n, maxLen] batches: what
// stays the same through a step's epochs — the behaviour log-probabilities,
// the mask, and the frozen reference's log-probabilities when the loss has a
// KL term.
type stepBatch struct {
	Completions    []*Completion
	Old, Mask, Ref tensor.Batch[float64]
}

// prepare lays out cs, evaluating the reference if withRef.
func (a *Agent) prepare(cs []*Completion, withRef bool) *stepBatch {
	n := len(cs)
	mk := func() tensor.Batch[float64] { return tensor.MustNew[float64](n, maxLen) }
	s := &stepBatch{Completions: cs, Old: mk(), Mask: mk()}
	if withRef {
		s.Ref = mk()
	}
	refPass := a.Ref.NewPass()
	for i, c := range cs {
		for t, tok := range c.Tokens {
			k := i*maxLen + t
			s.Old.Data[k] = c.Logp[t]
			s.Mask.Data[k] = 1
			if withRef {
				a.feats = features(a.feats, c.Prompt, c.Hint, c.Tokens[:t])
				a.Ref.Forward(refPass, a.feats)
				s.Ref.Data[k] = math.Log(refPass.P[tok])
			}
		}
	}
	return s
}

// forwardBatch is the current policy evaluated on a stepBatch, with the
// forward passes that backward needs.
type forwardBatch struct {
	*stepBatch
	Logp   tensor.Batch[float64]
	passes [][]*policy.Pass
}

// forward evaluates the current policy on every token of s.
func (a *Agent) forward(s *stepBatch) *forwardBatch {
	n := len(s.Completions)
	b := &forwardBatch{stepBatch: s, Logp: tensor.MustNew[float64](n, maxLen), passes: make([][]*policy.Pass, n)}
	for i, c := range s.Completions {
		if c.Version == a.Version && len(c.passes) == len(c.Tokens) {
			// Generated by this very policy: its passes are the forward.
			b.passes[i] = c.passes
			for t, tok := range c.Tokens {
				b.Logp.Data[i*maxLen+t] = math.Log(c.passes[t].P[tok])
			}
			continue
		}
		b.passes[i] = make([]*policy.Pass, len(c.Tokens))
		for t, tok := range c.Tokens {
			a.feats = features(a.feats, c.Prompt, c.Hint, c.Tokens[:t])
			p := a.Model.NewPass()
			a.Model.Forward(p, a.feats)
			b.passes[i][t] = p
			b.Logp.Data[i*maxLen+t] = math.Log(p.P[tok])
		}
	}
	return b
}

// backward adds scale·dL/dθ to g, given dL/dlogp per token of b.
func (a *Agent) backward(g *policy.Grads, b *forwardBatch, grad []float64, scale float64) {
	for i, c := range b.Completions {
		for t, tok := range c.Tokens {
			a.Model.BackwardLogp(g, b.passes[i][t], tok, scale*grad[i*maxLen+t], a.scratch)
		}
	}
}

// klToBehaviour estimates KL(π_θ‖π_θold) on cs, the mean over their tokens
// of r·log r − (r − 1) with r = π_θ/π_θold (an unbiased, non-negative
// estimate under π_θold's samples): how far the policy has moved on them.
func (a *Agent) klToBehaviour(cs []*Completion) float64 {
	var sum float64
	n := 0
	pass := a.Model.NewPass()
	for _, c := range cs {
		for t, tok := range c.Tokens {
			a.feats = features(a.feats, c.Prompt, c.Hint, c.Tokens[:t])
			a.Model.Forward(pass, a.feats)
			x := math.Log(pass.P[tok]) - c.Logp[t]
			r := math.Exp(x)
			sum += r*x - (r - 1)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
