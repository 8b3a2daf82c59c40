package main

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/replay"
)

// Settings are the knobs shared by the runs. They were fixed on the GRPO
// runs alone, before any AVATAR result was looked at (see the README).
type Settings struct {
	Seed           uint64
	Steps          int     // training steps per run
	EvalEvery      int     // steps between evaluations
	PrintEvery     int     // steps between progress lines (0: none)
	PromptsPerStep int     // prompts (groups) per step, every method
	GroupSize      int     // grpo and dapo responses per prompt
	OnPolicy       int     // AVATAR's fresh responses per prompt (and grpo_matched's)
	OffPolicy      int     // AVATAR's replayed responses per prompt
	Epochs         int     // gradient steps per batch
	LR             float64 // Adam learning rate
	Target         float64 // greedy accuracy over the prompt set that counts as reached
	Easy, Hard     int     // prompts of each kind
	WarmStartSteps int     // supervised steps on the format
}

// Point is one evaluation of the prompt set.
type Point struct {
	Step, Completions int
	Accuracy, Hard    float64
}

// RunResult is the record of one run.
type RunResult struct {
	Name  string
	Curve []Point
	// CompletionsToTarget counts generated completions until accuracy
	// first reached the target; −1 if it never did.
	CompletionsToTarget int
	// StepsToTarget is the training step at which it did (−1 if never).
	StepsToTarget int
	// Final is the last accuracy, FinalHard that on the hard prompts.
	Final, FinalHard float64
	// ZeroAdv is the fraction of on-policy groups whose rewards were all
	// equal, so that their GRPO advantages vanished; ZeroAdvHard the same
	// over the hard prompts' groups.
	ZeroAdv, ZeroAdvHard float64
	// Rescued is, for the replay runs, the fraction of vanished groups
	// whose own prompt got a non-zero gradient from replay in that step
	// (replay.StepResult.Rescued); −1 for the others.
	Rescued float64
}

// stepStats is what one training step reports: counts of on-policy groups.
type stepStats struct {
	Reward                   float64 // mean reward of the completions generated this step
	Groups, Vanished         int
	HardGroups, HardVanished int
	Rescued                  int
	Tiers                    string // replay tier sizes, AVATAR only
}

// count adds one group to the statistics.
func (s *stepStats) count(p Prompt, g []*Completion) {
	vanished := true
	for _, c := range g[1:] {
		vanished = vanished && c.Reward == g[0].Reward
	}
	s.Groups++
	if p.Hard() {
		s.HardGroups++
	}
	if vanished {
		s.Vanished++
		if p.Hard() {
			s.HardVanished++
		}
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
	agent       *Agent
	scorer      *Scorer
	rng         *rand.Rand
	prompts     []Prompt
	completions int
}

// nextPrompt draws a prompt uniformly with replacement, so that prompts
// come back and their VCRS accumulates, as in a dataset trained for many
// epochs.
func (r *runner) nextPrompt() Prompt { return r.prompts[r.rng.IntN(len(r.prompts))] }

// generate samples n responses to p, scores them and counts them.
func (r *runner) generate(p Prompt, n int) ([]*Completion, error) {
	out := make([]*Completion, n)
	for i := range out {
		c := r.agent.Generate(p, false)
		if err := r.scorer.Score(c); err != nil {
			return nil, err
		}
		out[i] = c
	}
	r.completions += n
	return out, nil
}

// evaluate decodes every prompt greedily and returns the accuracy, overall
// and on the hard prompts.
func (r *runner) evaluate() (acc, hard float64, err error) {
	nHard := 0
	for _, p := range r.prompts {
		c := r.agent.Generate(p, true)
		if err := r.scorer.Score(c); err != nil {
			return 0, 0, err
		}
		acc += c.Accuracy
		if p.Hard() {
			hard += c.Accuracy
			nHard++
		}
	}
	return acc / float64(len(r.prompts)), hard / float64(max(nHard, 1)), nil
}

// train runs m from the warm-started model base and records its curve.
func train(m method, base *policy.Model, prompts []Prompt, set Settings, log io.Writer) (RunResult, error) {
	scorer, err := newScorer()
	if err != nil {
		return RunResult{}, err
	}
	r := &runner{set: set, agent: newAgent(base.Clone(), set.LR, set.Seed), scorer: scorer,
		rng: rand.New(rand.NewPCG(set.Seed, 3)), prompts: prompts}
	res := RunResult{Name: m.Name(), CompletionsToTarget: -1, StepsToTarget: -1, Rescued: -1}
	record := func(step int) error {
		acc, hard, err := r.evaluate()
		if err != nil {
			return err
		}
		res.Curve = append(res.Curve, Point{Step: step, Completions: r.completions, Accuracy: acc, Hard: hard})
		res.Final, res.FinalHard = acc, hard
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
		st, err := m.Step(r)
		if err != nil {
			return res, fmt.Errorf("%s step %d: %v", m.Name(), step, err)
		}
		tot.Groups += st.Groups
		tot.Vanished += st.Vanished
		tot.HardGroups += st.HardGroups
		tot.HardVanished += st.HardVanished
		tot.Rescued += st.Rescued
		if step%set.EvalEvery == 0 || step == set.Steps {
			if err := record(step); err != nil {
				return res, err
			}
		}
		if log != nil && set.PrintEvery > 0 && step%set.PrintEvery == 0 {
			pt := res.Curve[len(res.Curve)-1]
			fmt.Fprintf(log, "%-14s step %4d  completions %6d  reward %+.3f  acc %.3f (hard %.3f)  zero-adv groups %.2f%s\n",
				m.Name(), step, r.completions, st.Reward, pt.Accuracy, pt.Hard, frac(st.Vanished, st.Groups), st.Tiers)
		}
	}
	res.ZeroAdv = frac(tot.Vanished, tot.Groups)
	res.ZeroAdvHard = frac(tot.HardVanished, tot.HardGroups)
	if _, ok := m.(*avatarMethod); ok {
		res.Rescued = frac(tot.Rescued, tot.Vanished)
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

func meanReward(cs []*Completion) float64 {
	var s float64
	for _, c := range cs {
		s += c.Reward
	}
	return s / float64(max(len(cs), 1))
}

// familyLoss is the clipped loss every GRPO-family run here uses, AVATAR's
// included: AVATAR's defaults (replay.DefaultObjectiveConfig: ε 0.2 both
// ways, token mean, k3 KL to the warm start with β = 0.1, AVATAR §5), so
// that the runs differ in how they build batches and advantages only.
func familyLoss() ppo.Config { return replay.DefaultObjectiveConfig().Loss }

// grpoMethod: size responses to each of the step's prompts, group-
// normalised advantages (Eq. 1), one loss over all of them.
type grpoMethod struct {
	name string
	size int
}

func (m grpoMethod) Name() string { return m.name }

func (m grpoMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	var st stepStats
	var cs []*Completion
	for range set.PromptsPerStep {
		p := r.nextPrompt()
		g, err := r.generate(p, m.size)
		if err != nil {
			return st, err
		}
		st.count(p, g)
		cs = append(cs, g...)
	}
	rewards := make([]float64, len(cs))
	for i, c := range cs {
		rewards[i] = c.Reward
	}
	adv := make([]float64, len(cs))
	if _, err := grpo.Advantages(adv, rewards, grpo.Contiguous(m.size), grpo.DefaultConfig()); err != nil {
		return st, err
	}
	if _, err := r.agent.Update([]Part{{Completions: cs, Advantages: sequenceAdvantages(cs, adv), Weight: 1}}, familyLoss(), set.Epochs); err != nil {
		return st, err
	}
	st.Reward = meanReward(cs)
	return st, nil
}

// dapoMethod: clip-higher, token-level mean, no KL, soft overlong
// punishment and dynamic sampling — groups whose rewards are all equal are
// dropped and new prompts drawn until the batch is full (or a budget of
// three times the batch is spent); every generated response counts.
type dapoMethod struct{}

func (dapoMethod) Name() string { return "dapo" }

func (dapoMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	over := grpo.Overlong{MaxLen: maxLen, Buffer: 4, Factor: 1}
	var st stepStats
	var kept, all []*Completion
	groups := 0
	keep := make([]bool, 1)
	for tries := 0; groups < set.PromptsPerStep && tries < 3*set.PromptsPerStep; tries++ {
		p := r.nextPrompt()
		g, err := r.generate(p, set.GroupSize)
		if err != nil {
			return st, err
		}
		all = append(all, g...)
		rewards := make([]float64, len(g))
		lengths := make([]int, len(g))
		for i, c := range g {
			rewards[i], lengths[i] = c.Reward, len(c.Tokens)
		}
		if err := grpo.ApplyOverlong(rewards, lengths, over); err != nil {
			return st, err
		}
		for i, c := range g {
			c.Reward = rewards[i]
		}
		st.count(p, g)
		if _, err := grpo.DynamicSampling(keep, rewards, grpo.Contiguous(set.GroupSize)); err != nil {
			return st, err
		}
		if keep[0] {
			kept = append(kept, g...)
			groups++
		}
	}
	st.Reward = meanReward(all)
	if groups == 0 {
		return st, nil // every group vanished: nothing to learn from this step
	}
	rewards := make([]float64, len(kept))
	for i, c := range kept {
		rewards[i] = c.Reward
	}
	adv := make([]float64, len(kept))
	if _, err := grpo.Advantages(adv, rewards, grpo.Contiguous(set.GroupSize), grpo.DefaultConfig()); err != nil {
		return st, err
	}
	_, err := r.agent.Update([]Part{{Completions: kept, Advantages: sequenceAdvantages(kept, adv), Weight: 1}}, grpo.DAPOLoss(), set.Epochs)
	return st, err
}
