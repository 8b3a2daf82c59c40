package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/presets"
)

// Settings are the knobs shared by the runs. They were fixed on the GRPO
// runs alone, before any AVATAR result was looked at (docs/avatar.md).
type Settings struct {
	Seed           uint64
	Steps          int     // training steps (iterations) per run
	EvalEvery      int     // steps between evaluations
	PromptsPerStep int     // prompts (groups) per step, every method
	GroupSize      int     // grpo's responses per prompt (the paper's GRPO: 8)
	OnPolicy       int     // AVATAR's fresh responses per prompt (and grpo_matched's)
	OffPolicy      int     // AVATAR's replayed responses per prompt
	LR             float64 // Adam learning rate
	Target         float64 // held-out greedy exact-match accuracy that counts as reached
	Train, Held    int     // training and held-out prompts
	SFTSteps       int     // stage S0 steps
	Buffer         int     // AVATAR's buffer capacity
	MaxStaleness   int64   // AVATAR's staleness bound η (policy versions)
}

// Point is one evaluation on the held-out prompts.
type Point struct {
	Step, Completions int
	Accuracy, RMAE    float64 // exact match and mean rMAE, greedy
}

// RunResult is the record of one run.
type RunResult struct {
	Name  string
	Curve []Point
	// CompletionsToTarget counts generated completions until accuracy
	// first reached the target; −1 if it never did. StepsToTarget is the
	// step at which it did.
	CompletionsToTarget, StepsToTarget int
	// Final is the last held-out accuracy, FinalRMAE its mean rMAE.
	Final, FinalRMAE float64
	// ZeroAdv is the fraction of on-policy groups whose rewards were all
	// equal, so that their GRPO advantages vanished.
	ZeroAdv float64
	// Diag holds AVATAR's diagnostics (nil for the GRPO runs).
	Diag *Diagnostics
}

// stepStats is what one training step reports: counts of on-policy groups.
type stepStats struct {
	Groups, Vanished int
}

// count adds one group to the statistics.
func (s *stepStats) count(g []*Completion) {
	vanished := true
	for _, c := range g[1:] {
		vanished = vanished && c.Reward == g[0].Reward
	}
	s.Groups++
	if vanished {
		s.Vanished++
	}
}

// method is one training algorithm.
type method interface {
	Name() string
	Step(r *runner) (stepStats, error)
}

// runner is the state of one run.
type runner struct {
	set         Settings
	world       *World
	agent       *Agent
	scorer      *Scorer
	rng         *rand.Rand
	train, held []Prompt
	completions int
	step        int
}

// nextPrompt draws a training prompt uniformly with replacement.
func (r *runner) nextPrompt() Prompt { return r.train[r.rng.IntN(len(r.train))] }

// generate samples n responses to p with the given hint, scores them and
// counts them.
func (r *runner) generate(p Prompt, hint, n int) ([]*Completion, error) {
	out := make([]*Completion, n)
	for i := range out {
		c := r.agent.Generate(p, hint, false)
		if err := r.scorer.Score(c); err != nil {
			return nil, err
		}
		out[i] = c
	}
	r.completions += n
	return out, nil
}

// evaluate decodes every held-out prompt greedily, without hints.
func (r *runner) evaluate() (acc, rmae float64, err error) {
	for _, p := range r.held {
		c := r.agent.Generate(p, -1, true)
		if err := r.scorer.Score(c); err != nil {
			return 0, 0, err
		}
		if c.Exact {
			acc++
		}
		rmae += c.Accuracy
	}
	n := float64(len(r.held))
	return acc / n, rmae / n, nil
}

// train runs m from the S0 model base and records its curve; tick, if
// not nil, is called after every step.
func train(m method, base *policy.Model, w *World, pool []Prompt, set Settings, tick func()) (RunResult, error) {
	scorer, err := newScorer(w)
	if err != nil {
		return RunResult{}, err
	}
	n := trainCount(pool)
	r := &runner{set: set, world: w, agent: newAgent(base.Clone(), set.LR, set.Seed), scorer: scorer,
		rng: rand.New(rand.NewPCG(set.Seed, 3)), train: pool[:n], held: pool[n:]}
	res := RunResult{Name: m.Name(), CompletionsToTarget: -1, StepsToTarget: -1}
	record := func(step int) error {
		acc, rm, err := r.evaluate()
		if err != nil {
			return err
		}
		res.Curve = append(res.Curve, Point{Step: step, Completions: r.completions, Accuracy: acc, RMAE: rm})
		res.Final, res.FinalRMAE = acc, rm
		if res.CompletionsToTarget < 0 && acc >= set.Target {
			res.CompletionsToTarget, res.StepsToTarget = r.completions, step
		}
		return nil
	}
	if err := record(0); err != nil {
		return res, err
	}
	var tot stepStats
	for step := 1; step <= set.Steps; step++ {
		r.step = step
		st, err := m.Step(r)
		if err != nil {
			return res, fmt.Errorf("%s step %d: %v", m.Name(), step, err)
		}
		tot.Groups += st.Groups
		tot.Vanished += st.Vanished
		if step%set.EvalEvery == 0 || step == set.Steps {
			if err := record(step); err != nil {
				return res, err
			}
		}
		if tick != nil {
			tick()
		}
	}
	res.ZeroAdv = frac(tot.Vanished, tot.Groups)
	if a, ok := m.(*avatarMethod); ok {
		res.Diag = a.diag.finish()
	}
	return res, nil
}

func frac(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// sequenceAdvantages broadcasts one advantage per completion to its tokens.
func sequenceAdvantages(cs []*Completion, adv []float64) [][]float64 {
	out := make([][]float64, len(cs))
	for i, c := range cs {
		row := make([]float64, len(c.Tokens))
		for t := range row {
			row[t] = adv[i]
		}
		out[i] = row
	}
	return out
}

// familyLoss is the clipped loss every run uses, AVATAR's included: the
// paper's (presets.AVATAR: ε 0.2, token mean, k3 KL to π_ref with β 0.1),
// so that the runs differ in how they build batches and advantages only.
func familyLoss() ppo.Config { return presets.AVATAR().Objective.Loss }

// grpoMethod: size responses to each of the step's prompts, group-
// normalised advantages (Eq. 1), one update on all of them.
type grpoMethod struct {
	name string
	size int
}

func (m grpoMethod) Name() string { return m.name }

func (m grpoMethod) Step(r *runner) (stepStats, error) {
	var st stepStats
	var cs []*Completion
	for range r.set.PromptsPerStep {
		g, err := r.generate(r.nextPrompt(), -1, m.size)
		if err != nil {
			return st, err
		}
		st.count(g)
		cs = append(cs, g...)
	}
	rewards := make([]float64, len(cs))
	for i, c := range cs {
		rewards[i] = c.Reward
	}
	adv := make([]float64, len(cs))
	if _, err := grpo.Advantages(adv, rewards, grpo.Contiguous(m.size), presets.AVATAR().Objective.Group); err != nil {
		return st, err
	}
	_, err := r.agent.Update([]Part{{Completions: cs, Advantages: sequenceAdvantages(cs, adv), Weight: 1}}, familyLoss(), 1)
	return st, err
}
