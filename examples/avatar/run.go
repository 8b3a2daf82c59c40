package main

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
	"github.com/rlpost/rlpost/grpo"
)

// Settings are the knobs shared by the three runs.
type Settings struct {
	Seed           uint64
	Steps          int     // training steps per run
	EvalEvery      int     // steps between held-out evaluations
	PrintEvery     int     // steps between progress lines
	PromptsPerStep int     // prompts (groups) per step
	GroupSize      int     // GRPO/DAPO responses per prompt
	OnPolicy       int     // AVATAR on-policy responses per prompt
	OffPolicy      int     // AVATAR replayed responses per prompt
	Epochs         int     // gradient steps per batch
	LR             float64 // Adam learning rate
	Target         float64 // held-out accuracy that counts as reached
	TrainPrompts   int     // size of the training set
	HeldOut        int     // held-out prompts, disjoint from the training set
	WarmStartSteps int     // supervised steps teaching the format
}

// Point is one evaluation on the held-out prompts.
type Point struct {
	Step, Completions int
	Accuracy, Hard    float64
}

// RunResult is the record of one run.
type RunResult struct {
	Name  string
	Curve []Point
	// CompletionsToTarget counts generated completions until held-out
	// accuracy first reached the target; −1 if it never did.
	CompletionsToTarget int
	// StepsToTarget is the training step at which it did (−1 if never).
	StepsToTarget int
	// Final is the last held-out accuracy.
	Final float64
	// ZeroAdv is the mean fraction of on-policy groups whose advantages
	// vanished (all rewards equal).
	ZeroAdv float64
	// Rescued is, for AVATAR, the mean fraction of vanished groups whose
	// prompt still contributed gradient through replayed experiences.
	Rescued float64
}

// stepStats is what one training step reports.
type stepStats struct {
	Reward  float64 // mean reward of the completions generated this step
	ZeroAdv float64 // fraction of on-policy groups with vanishing advantage
	Tiers   string  // replay tier sizes, AVATAR only
	Rescued float64
}

// method is one of the three training algorithms.
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
	train       []Prompt
	completions int
}

// nextPrompt draws a training prompt, uniformly with replacement, so that
// prompts come back and their VCRS accumulates as in a dataset trained for
// several epochs.
func (r *runner) nextPrompt() Prompt { return r.train[r.rng.IntN(len(r.train))] }

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

// evaluate decodes every held-out prompt greedily and returns the accuracy,
// overall and on the multi-digit (hard) queries.
func (r *runner) evaluate(held []Prompt) (acc, hard float64, err error) {
	nHard := 0
	for _, p := range held {
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
	return acc / float64(len(held)), hard / float64(max(nHard, 1)), nil
}

// train runs m from the warm-started model base on the training prompts and
// records its curve on the held-out ones.
func train(m method, base *policy.Model, trainSet, held []Prompt, set Settings, log io.Writer) (RunResult, error) {
	scorer, err := newScorer()
	if err != nil {
		return RunResult{}, err
	}
	r := &runner{set: set, agent: newAgent(base.Clone(), set.LR, set.Seed), scorer: scorer,
		rng: rand.New(rand.NewPCG(set.Seed, 3)), train: trainSet}
	res := RunResult{Name: m.Name(), CompletionsToTarget: -1, StepsToTarget: -1}
	record := func(step int) error {
		acc, hard, err := r.evaluate(held)
		if err != nil {
			return err
		}
		res.Curve = append(res.Curve, Point{Step: step, Completions: r.completions, Accuracy: acc, Hard: hard})
		res.Final = acc
		if res.CompletionsToTarget < 0 && acc >= set.Target {
			res.CompletionsToTarget, res.StepsToTarget = r.completions, step
		}
		return nil
	}
	if err := record(0); err != nil {
		return res, err
	}
	var zero, rescued float64
	for step := 1; step <= set.Steps; step++ {
		st, err := m.Step(r)
		if err != nil {
			return res, fmt.Errorf("%s step %d: %v", m.Name(), step, err)
		}
		zero += st.ZeroAdv
		rescued += st.Rescued
		if step%set.EvalEvery == 0 || step == set.Steps {
			if err := record(step); err != nil {
				return res, err
			}
		}
		if log != nil && step%set.PrintEvery == 0 {
			pt := res.Curve[len(res.Curve)-1]
			fmt.Fprintf(log, "%-6s step %4d  completions %6d  reward %+.3f  held-out acc %.3f (hard %.3f)  zero-adv groups %.2f%s\n",
				m.Name(), step, r.completions, st.Reward, pt.Accuracy, pt.Hard, st.ZeroAdv, st.Tiers)
		}
	}
	res.ZeroAdv = zero / float64(set.Steps)
	res.Rescued = rescued / float64(set.Steps)
	return res, nil
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

// GRPO: G responses per prompt, group-normalised advantages, the GRPO
// paper's loss (ε 0.2, k3 KL β 0.04, per-sequence mean).
type grpoMethod struct{}

func (grpoMethod) Name() string { return "grpo" }

func (grpoMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	var cs []*Completion
	for range set.PromptsPerStep {
		g, err := r.generate(r.nextPrompt(), set.GroupSize)
		if err != nil {
			return stepStats{}, err
		}
		cs = append(cs, g...)
	}
	rewards := make([]float64, len(cs))
	for i, c := range cs {
		rewards[i] = c.Reward
	}
	adv := make([]float64, len(cs))
	st, err := grpo.Advantages(adv, rewards, grpo.Contiguous(set.GroupSize), grpo.DefaultConfig())
	if err != nil {
		return stepStats{}, err
	}
	if _, err := r.agent.Update([]Part{{Completions: cs, Advantages: sequenceAdvantages(cs, adv), Weight: 1}}, grpo.GRPOLoss(), set.Epochs); err != nil {
		return stepStats{}, err
	}
	return stepStats{Reward: meanReward(cs), ZeroAdv: st.VanishingFrac}, nil
}

// DAPO: clip-higher, token-level mean, no KL, soft overlong punishment and
// dynamic sampling — groups whose rewards are all equal are dropped and new
// prompts drawn until the batch is full (or a budget of three times the
// batch is spent); every generated response counts.
type dapoMethod struct{}

func (dapoMethod) Name() string { return "dapo" }

func (dapoMethod) Step(r *runner) (stepStats, error) {
	set := r.set
	over := grpo.Overlong{MaxLen: maxLen, Buffer: 4, Factor: 1}
	var kept, all []*Completion
	groups, vanished := 0, 0
	keep := make([]bool, 1)
	for tries := 0; groups < set.PromptsPerStep && tries < 3*set.PromptsPerStep; tries++ {
		g, err := r.generate(r.nextPrompt(), set.GroupSize)
		if err != nil {
			return stepStats{}, err
		}
		all = append(all, g...)
		rewards := make([]float64, len(g))
		lengths := make([]int, len(g))
		for i, c := range g {
			rewards[i], lengths[i] = c.Reward, len(c.Tokens)
		}
		if err := grpo.ApplyOverlong(rewards, lengths, over); err != nil {
			return stepStats{}, err
		}
		for i, c := range g {
			c.Reward = rewards[i]
		}
		if _, err := grpo.DynamicSampling(keep, rewards, grpo.Contiguous(set.GroupSize)); err != nil {
			return stepStats{}, err
		}
		if !keep[0] {
			vanished++
			continue
		}
		kept = append(kept, g...)
		groups++
	}
	st := stepStats{Reward: meanReward(all), ZeroAdv: float64(vanished) / float64(groups+vanished)}
	if groups == 0 {
		return st, nil // every group vanished: nothing to learn from this step
	}
	rewards := make([]float64, len(kept))
	for i, c := range kept {
		rewards[i] = c.Reward
	}
	adv := make([]float64, len(kept))
	if _, err := grpo.Advantages(adv, rewards, grpo.Contiguous(set.GroupSize), grpo.DefaultConfig()); err != nil {
		return stepStats{}, err
	}
	_, err := r.agent.Update([]Part{{Completions: kept, Advantages: sequenceAdvantages(kept, adv), Weight: 1}}, grpo.DAPOLoss(), set.Epochs)
	return st, err
}
