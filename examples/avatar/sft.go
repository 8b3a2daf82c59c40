package main

import (
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
)

// warmStart trains a fresh policy by supervised learning, briefly, on
// demonstrations in the format <think>…</think><answer>…</answer> with the
// right number of answer digits but random ones: the stand-in for a
// pretrained model that roughly knows how to answer but not what. It is
// short on purpose — a fair share of the first responses break the format,
// which RL (on the easy prompts above all) then teaches. Every run of a
// seed starts from this same policy.
func warmStart(seed uint64, prompts []Prompt, steps int) *policy.Model {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := policy.New(numFeatures, hidden, vocab, rng)
	opt := policy.NewAdam(m, 0.01)
	g := m.NewGrads()
	pass := m.NewPass()
	scratch := make([]float64, vocab)
	var feats []int
	for range steps {
		g.Zero()
		for range 16 {
			p := prompts[rng.IntN(len(prompts))]
			demo := []int{tokThink}
			for range 1 + rng.IntN(3) {
				demo = append(demo, tokFillA+rng.IntN(3))
			}
			demo = append(demo, tokThinkEnd, tokAnswer)
			for range p.Secret {
				demo = append(demo, rng.IntN(numDigits))
			}
			demo = append(demo, tokAnswerEnd, tokEOS)
			for t, tok := range demo {
				feats = features(feats, p, demo[:t])
				m.Forward(pass, feats)
				m.BackwardLogp(g, pass, tok, -1.0/16, scratch) // minimise −log p
			}
		}
		opt.Step(m, g)
	}
	return m
}
