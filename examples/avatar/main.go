// Command avatar trains a small pure-Go policy with rlpost three ways —
// GRPO, DAPO and AVATAR — from the same starting point, and shows how many
// generated completions each needs to reach a held-out accuracy target.
//
// Usage:
//
//	go run ./examples/avatar            # a few minutes: progress, summary, avatar.png
//	go run ./examples/avatar -quick     # under 3 minutes; the last line is JSON
//
// The task (task.go): a prompt shows four digits and asks for one, two or
// three of them, written as one number in
// <think>…</think><answer>…</answer>. The policy is a small MLP (package
// examples/internal/policy) warm-started by supervised learning to answer
// in that format with the right number of random digits, the stand-in for
// a pretrained model: it knows how to answer but not what. Rewards are
// AVATAR's stage-1 composite 0.5·format + 0.5·accuracy (rewards.Format and
// the `number` verifier). A random answer to a one-digit query is right one
// time in ten, to a two-digit query one in a hundred: groups of responses
// to the hard queries are all wrong, and GRPO's advantages vanish there.
//
// The runs:
//
//	grpo    8 prompts × 8 responses per step, group-normalised advantages,
//	        grpo.GRPOLoss (ε 0.2, k3 KL to the warm start, β 0.04)
//	dapo    grpo.DAPOLoss (clip 0.2/0.28, token mean, no KL), dynamic
//	        sampling (groups with equal rewards are dropped and new prompts
//	        drawn; every response generated counts), overlong shaping
//	avatar  8 prompts × 4 on-policy responses + 4 replayed per prompt from
//	        the stratified buffer (package replay), off-policy advantages
//	        against VCRS (Eq. 11), TAS on both parts, J_on + α·J_off (Eq. 3)
//
// Everything is single-threaded float64 drawn from -seed, so a seed gives
// the same numbers on every run.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

const hidden = 128

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "avatar:", err)
		os.Exit(1)
	}
}

// splitPrompts draws the training set and a disjoint held-out set.
func splitPrompts(set Settings) (trainSet, held []Prompt) {
	rng := rand.New(rand.NewPCG(set.Seed, 0xbe1d))
	seen := map[uint64]bool{}
	draw := func(n int) []Prompt {
		out := make([]Prompt, 0, n)
		for len(out) < n {
			p := randomPrompt(rng)
			if !seen[p.ID()] {
				seen[p.ID()] = true
				out = append(out, p)
			}
		}
		return out
	}
	return draw(set.TrainPrompts), draw(set.HeldOut)
}

// settingsFor returns the settings of the default or quick run.
func settingsFor(quick bool, seed uint64) Settings {
	s := Settings{
		Seed: seed, Steps: 300, EvalEvery: 1, PrintEvery: 25,
		PromptsPerStep: 8, GroupSize: 8, OnPolicy: 4, OffPolicy: 4,
		Epochs: 2, LR: 3e-3, Target: 0.8, TrainPrompts: 512, HeldOut: 300, WarmStartSteps: 300,
	}
	if quick {
		s.Steps, s.PrintEvery, s.HeldOut = 150, 25, 200
	}
	return s
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("avatar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "one seed, shorter; the last stdout line is a JSON summary")
	seed := fs.Uint64("seed", 1, "seed of everything random (the first seed without -quick)")
	seeds := fs.Int("seeds", 5, "seeds to run without -quick, two at a time")
	png := fs.String("png", "avatar.png", "where to write the accuracy plot of the first seed (\"\" for none)")
	steps := fs.Int("steps", 0, "training steps per run (0: the mode's default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seeds < 1 || *steps < 0 {
		return fmt.Errorf("-seeds %d -steps %d: need ≥ 1 seed and ≥ 0 steps", *seeds, *steps)
	}
	start := time.Now()
	n := *seeds
	if *quick {
		n = 1
	}
	sets := make([]Settings, n)
	for i := range sets {
		sets[i] = settingsFor(*quick, *seed+uint64(i))
		if *steps > 0 {
			sets[i].Steps = *steps
		}
	}
	set := sets[0]
	fmt.Fprintf(stdout, "task: %d training prompts, %d held-out; %d steps of %d prompts per run; target %.2f held-out accuracy\n",
		set.TrainPrompts, set.HeldOut, set.Steps, set.PromptsPerStep, set.Target)
	all, err := experiments(sets, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nseed %d:\n", set.Seed)
	printSummary(stdout, all[0], set)
	if n > 1 {
		printSeeds(stdout, all, sets)
	}
	if *png != "" {
		if err := plotCurves(*png, all[0], set.Target); err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		fmt.Fprintf(stdout, "wrote %s (seed %d)\n", *png, set.Seed)
	}
	fmt.Fprintf(stdout, "total %.1fs\n", time.Since(start).Seconds())
	if *quick {
		return printJSON(stdout, all[0], set.Target)
	}
	return nil
}

// experiments runs the three methods for every seed, two seeds at a time on
// the two cores, and prints the first seed's progress to log as it goes.
// Each seed is independent and single-threaded, so results do not depend
// on the scheduling.
func experiments(sets []Settings, log io.Writer) ([][]RunResult, error) {
	out := make([][]RunResult, len(sets))
	errs := make([]error, len(sets))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(2, len(sets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var w io.Writer
				if i == 0 {
					w = log
				}
				out[i], errs[i] = experiment(sets[i], w)
			}
		}()
	}
	for i := range sets {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

// experiment runs GRPO, DAPO and AVATAR from one warm start.
func experiment(set Settings, log io.Writer) ([]RunResult, error) {
	base := warmStart(set.Seed, set.WarmStartSteps)
	trainSet, held := splitPrompts(set)
	ms, err := methods()
	if err != nil {
		return nil, err
	}
	runs := make([]RunResult, len(ms))
	for i, m := range ms {
		if runs[i], err = train(m, base, trainSet, held, set, log); err != nil {
			return nil, fmt.Errorf("seed %d: %v", set.Seed, err)
		}
	}
	return runs, nil
}

// methods returns fresh instances of the three runs.
func methods() ([]method, error) {
	avatar, err := newAvatarMethod()
	if err != nil {
		return nil, err
	}
	return []method{grpoMethod{}, dapoMethod{}, avatar}, nil
}

func printSummary(w io.Writer, runs []RunResult, set Settings) {
	fmt.Fprintf(w, "%-7s %20s %7s %8s %10s %9s %8s\n", "method", fmt.Sprintf("completions to %.2f", set.Target),
		"steps", "vs grpo", "final acc", "zero-adv", "rescued")
	fmt.Fprintln(w, strings.Repeat("-", 75))
	base := runs[0].CompletionsToTarget // runs[0] is GRPO
	for _, r := range runs {
		reach, steps, ratio := "never", "—", "—"
		if r.CompletionsToTarget >= 0 {
			reach, steps = fmt.Sprint(r.CompletionsToTarget), fmt.Sprint(r.StepsToTarget)
			if base > 0 {
				ratio = fmt.Sprintf("%.0f%%", 100*float64(r.CompletionsToTarget)/float64(base))
			}
		}
		rescued := "—"
		if r.Name == "avatar" {
			rescued = fmt.Sprintf("%.2f", r.Rescued)
		}
		fmt.Fprintf(w, "%-7s %20s %7s %8s %10.3f %9.2f %8s\n", r.Name, reach, steps, ratio, r.Final, r.ZeroAdv, rescued)
	}
}

// printJSON writes the one-line summary of -quick.
func printJSON(w io.Writer, runs []RunResult, target float64) error {
	type entry struct {
		CompletionsToTarget *int    `json:"completions_to_target"`
		FinalAccuracy       float64 `json:"final_accuracy"`
	}
	out := struct {
		Target float64          `json:"target"`
		Runs   map[string]entry `json:"runs"`
	}{Target: target, Runs: map[string]entry{}}
	for _, r := range runs {
		e := entry{FinalAccuracy: r.Final}
		if r.CompletionsToTarget >= 0 {
			n := r.CompletionsToTarget
			e.CompletionsToTarget = &n
		}
		out.Runs[r.Name] = e
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// printSeeds prints completions to target per seed and method, and each
// method's median and its median ratio to GRPO.
func printSeeds(w io.Writer, all [][]RunResult, sets []Settings) {
	fmt.Fprintf(w, "\ncompletions to %.2f by seed (ratio to grpo):\n", sets[0].Target)
	fmt.Fprintf(w, "%-7s", "method")
	for _, s := range sets {
		fmt.Fprintf(w, " %16s", fmt.Sprintf("seed %d", s.Seed))
	}
	fmt.Fprintf(w, " %16s\n", "median")
	for k := range all[0] {
		fmt.Fprintf(w, "%-7s", all[0][k].Name)
		var counts, ratios []float64
		for i := range all {
			r, g := all[i][k], all[i][0]
			cell := "never"
			if r.CompletionsToTarget >= 0 {
				counts = append(counts, float64(r.CompletionsToTarget))
				cell = fmt.Sprint(r.CompletionsToTarget)
				if g.CompletionsToTarget > 0 {
					ratio := float64(r.CompletionsToTarget) / float64(g.CompletionsToTarget)
					ratios = append(ratios, ratio)
					cell += fmt.Sprintf(" (%.0f%%)", 100*ratio)
				}
			}
			fmt.Fprintf(w, " %16s", cell)
		}
		med := "—"
		if len(counts) == len(all) {
			med = fmt.Sprintf("%.0f", median(counts))
			if len(ratios) == len(all) {
				med += fmt.Sprintf(" (%.0f%%)", 100*median(ratios))
			}
		}
		fmt.Fprintf(w, " %16s\n", med)
	}
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
