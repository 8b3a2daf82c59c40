package main

import (
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
)

// Stage S0 (AVATAR Table 1, "cold start SFT"): supervised learning on
// demonstrations that are always well formed — the format, the restated
// operands and the evidence are always right, so that the format is stable
// before RL — but whose plan and work are only partly right, differently
// per skill: the stand-in for a pretrained model that has seen some skills
// done well and others badly. For skill k the demonstration's plan is the
// skill's method with probability planRight[k], else the skill's decoy
// method; each work digit is the chosen method's rule with probability
// ruleRight[k], else the decoy digit (the rule's output plus one). A
// fraction hintShare of demonstrations carry a hint naming the skill's
// method, and their plan follows it: the policy learns to read hints
// before RL, as a hinted model would be prompted.
var (
	planRight = [numSkills]float64{0.9, 0.6, 0.3, 0.1}
	ruleRight = [numSkills]float64{0.95, 0.6, 0.4, 0.2}
)

const hintShare = 0.2

// decoyMethod is the wrong method the demonstrations of skill k use.
func decoyMethod(w *World, k int) int { return (w.SkillMethod[k] + 1) % numMethods }

// demo draws one demonstration for p.
func demo(w *World, p Prompt, rng *rand.Rand) (tokens []int, hint int) {
	hint = -1
	m := w.SkillMethod[p.Skill]
	switch {
	case rng.Float64() < hintShare:
		hint = m
	case rng.Float64() >= planRight[p.Skill]:
		m = decoyMethod(w, p.Skill)
	}
	var work [numOperands]int
	acc := 0
	for i, x := range p.Operands {
		acc = w.Step(m, acc, x)
		if rng.Float64() >= ruleRight[p.Skill] {
			acc = (acc + 1) % 10
		}
		work[i] = acc
	}
	return wellFormed(w, p, m, work), hint
}

// sft trains a fresh policy on demonstrations of the training prompts.
// Every run of a seed starts from this policy, which is also π_ref.
func sft(seed uint64, w *World, prompts []Prompt, steps int) *policy.Model {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := policy.New(numFeatures, hidden, vocab, rng)
	opt := policy.NewAdam(m, 0.02)
	g := m.NewGrads()
	pass := m.NewPass()
	scratch := make([]float64, vocab)
	var feats []int
	train := prompts[:trainCount(prompts)]
	const batch = 16
	for range steps {
		g.Zero()
		for range batch {
			p := train[rng.IntN(len(train))]
			toks, hint := demo(w, p, rng)
			for t, tok := range toks {
				feats = features(feats, p, hint, toks[:t])
				m.Forward(pass, feats)
				m.BackwardLogp(g, pass, tok, -1.0/batch, scratch) // minimise −log p
			}
		}
		opt.Step(m, g)
	}
	return m
}

// trainCount is the number of training prompts at the head of the pool.
func trainCount(pool []Prompt) int {
	for i, p := range pool {
		if p.Held {
			return i
		}
	}
	return len(pool)
}
