// Command avatar trains a small pure-Go policy with rlpost several ways
// from the same starting point and counts the generated completions each
// needs to reach an accuracy target, on a task where on-policy GRPO's
// advantages vanish on the hard prompts for long stretches.
//
// Usage:
//
//	go run ./examples/avatar            # 5 seeds, all runs and ablations, a table and avatar.png
//	go run ./examples/avatar -quick     # 3 seeds, the four main runs; the last line is JSON
//
// The task (task.go): a fixed set of prompts, half easy (a one-digit
// secret answer of four choices) and half hard (three digits: 1 in 64 at
// random), answered as <think>…</think><answer>…</answer>. Secrets are
// independent, so nothing learnt on one prompt helps another except the
// format. The policy is a small MLP (package examples/internal/policy),
// briefly warm-started to roughly follow the format with random digits.
// Rewards are AVATAR's stage-1 composite 0.5·format + 0.5·accuracy
// (rewards.Format and the `number` verifier). Accuracy is greedy accuracy
// over the prompt set.
//
// The runs, all with the same clipped loss (ε 0.2, token mean, k3 KL to
// the warm start, β 0.1) except dapo:
//
//	grpo              8 prompts × 8 responses per step (64 completions)
//	grpo_matched      8 prompts × 4 responses: exactly the 32 completions
//	                  per step AVATAR generates — the control that matters
//	dapo              grpo.DAPOLoss, dynamic sampling (vanished groups are
//	                  dropped and replaced; every completion counts),
//	                  overlong shaping, 8 per prompt
//	avatar            8 prompts × (4 fresh + 4 replayed for the same
//	                  prompt), Eq. 11 against VCRS, TAS, α 0.6 (package
//	                  replay's defaults)
//	avatar_no_tas     … with uniform token weights          (full run only)
//	avatar_no_vcrs    … with the replayed group's mean as the
//	                  off-policy baseline instead of R̄(q)   (full run only)
//	avatar_no_replay  … with no replayed part: grpo_matched
//	                  plus TAS                              (full run only)
//
// Everything is single-threaded float64 drawn from -seed, so a seed gives
// the same numbers on every run; runs go two at a time on two cores.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

const hidden = 64

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "avatar:", err)
		os.Exit(1)
	}
}

// settingsFor returns the settings of one seed; quick and full runs share
// them, and differ in seeds and runs only.
func settingsFor(seed uint64) Settings {
	return Settings{
		Seed: seed, Steps: 400, EvalEvery: 4, PrintEvery: 0,
		PromptsPerStep: 8, GroupSize: 8, OnPolicy: 4, OffPolicy: 4,
		Epochs: 2, LR: 1e-2, Target: 0.7, Easy: 32, Hard: 32, WarmStartSteps: 20,
	}
}

// mainRuns are the runs of -quick; the full run adds the ablations.
var (
	mainRuns  = []string{"grpo", "grpo_matched", "dapo", "avatar"}
	ablations = []string{"avatar_no_tas", "avatar_no_vcrs", "avatar_no_replay"}
)

// newMethod returns a fresh instance of the named run.
func newMethod(name string, set Settings) (method, error) {
	switch name {
	case "grpo":
		return grpoMethod{name: name, size: set.GroupSize}, nil
	case "grpo_matched":
		return grpoMethod{name: name, size: set.OnPolicy}, nil
	case "dapo":
		return dapoMethod{}, nil
	}
	for _, v := range []avatarVariant{avatarFull, avatarNoTAS, avatarNoVCRS, avatarNoReplay} {
		if v.name == name {
			return newAvatarMethod(v)
		}
	}
	return nil, fmt.Errorf("no run %q", name)
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("avatar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "3 seeds and the four main runs; the last stdout line is JSON")
	seed := fs.Uint64("seed", 1, "the first seed")
	seeds := fs.Int("seeds", 0, "seeds (0: 3 with -quick, 5 without)")
	png := fs.String("png", "avatar.png", "where to write the accuracy plot (\"\" for none)")
	steps := fs.Int("steps", 0, "training steps per run (0: the default)")
	verbose := fs.Bool("v", false, "print progress lines of the first seed")
	only := fs.String("runs", "", "comma-separated runs to do instead of the mode's (e.g. grpo,avatar)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seeds < 0 || *steps < 0 {
		return fmt.Errorf("-seeds %d -steps %d: need ≥ 0", *seeds, *steps)
	}
	start := time.Now()
	n, names := 5, append(slices.Clone(mainRuns), ablations...)
	if *quick {
		n, names = 3, mainRuns
	}
	if *seeds > 0 {
		n = *seeds
	}
	if *only != "" {
		names = strings.Split(*only, ",")
		for _, name := range names {
			if _, err := newMethod(name, settingsFor(1)); err != nil {
				return err
			}
		}
	}
	sets := make([]Settings, n)
	for i := range sets {
		sets[i] = settingsFor(*seed + uint64(i))
		if *steps > 0 {
			sets[i].Steps = *steps
		}
		if *verbose && i == 0 {
			sets[i].PrintEvery = 20
		}
	}
	set := sets[0]
	fmt.Fprintf(stdout, "task: %d easy + %d hard prompts; %d steps of %d prompts; target %.2f greedy accuracy; %d seeds\n",
		set.Easy, set.Hard, set.Steps, set.PromptsPerStep, set.Target, n)
	all, err := experiments(sets, names, stdout)
	if err != nil {
		return err
	}
	sum := summarise(all, names, set.Target)
	printTable(stdout, sum, sets)
	if *png != "" {
		if err := plotCurves(*png, all, names, set.Target); err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", *png)
	}
	fmt.Fprintf(stdout, "total %.1fs\n", time.Since(start).Seconds())
	return printJSON(stdout, sum, set.Target)
}

// experiments runs every named method for every seed, two runs at a time
// on the two cores; all[s][k] is seed s's run of names[k]. Each run is
// independent and single-threaded, so results do not depend on scheduling.
func experiments(sets []Settings, names []string, log io.Writer) ([][]RunResult, error) {
	all := make([][]RunResult, len(sets))
	for i := range all {
		all[i] = make([]RunResult, len(names))
	}
	type job struct{ s, k int }
	errs := make([]error, len(sets)*len(names))
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var w io.Writer
				if j.s == 0 && sets[0].PrintEvery > 0 {
					w = &lockedWriter{mu: &mu, w: log}
				}
				all[j.s][j.k], errs[j.s*len(names)+j.k] = experiment(sets[j.s], names[j.k], w)
			}
		}()
	}
	for s := range sets {
		for k := range names {
			jobs <- job{s, k}
		}
	}
	close(jobs)
	wg.Wait()
	return all, errors.Join(errs...)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// experiment runs one method on one seed from that seed's warm start.
func experiment(set Settings, name string, log io.Writer) (RunResult, error) {
	prompts := newPromptSet(set.Seed, set.Easy, set.Hard)
	base := warmStart(set.Seed, prompts, set.WarmStartSteps)
	m, err := newMethod(name, set)
	if err != nil {
		return RunResult{}, err
	}
	res, err := train(m, base, prompts, set, log)
	if err != nil {
		return res, fmt.Errorf("seed %d: %v", set.Seed, err)
	}
	return res, nil
}

// summary holds one method's medians over seeds.
type summary struct {
	Name string
	// Reach is the median completions to target, counting a run that
	// never reached it as +∞ (so the median is null when half or more
	// never did); Reached counts the runs that did.
	Reach            float64
	Reached, Seeds   int
	PerSeed          []int
	Final, FinalHard float64
	ZeroAdv, ZeroHrd float64
	Rescued          float64
}

func summarise(all [][]RunResult, names []string, target float64) []summary {
	out := make([]summary, len(names))
	for k, name := range names {
		s := summary{Name: name, Seeds: len(all), Rescued: -1}
		var reach, final, hard, zero, zeroHard, rescued []float64
		for i := range all {
			r := all[i][k]
			s.PerSeed = append(s.PerSeed, r.CompletionsToTarget)
			c := math.Inf(1)
			if r.CompletionsToTarget >= 0 {
				c = float64(r.CompletionsToTarget)
				s.Reached++
			}
			reach = append(reach, c)
			final = append(final, r.Final)
			hard = append(hard, r.FinalHard)
			zero = append(zero, r.ZeroAdv)
			zeroHard = append(zeroHard, r.ZeroAdvHard)
			rescued = append(rescued, r.Rescued)
		}
		s.Reach, s.Final, s.FinalHard = median(reach), median(final), median(hard)
		s.ZeroAdv, s.ZeroHrd = median(zero), median(zeroHard)
		if rescued[0] >= 0 {
			s.Rescued = median(rescued)
		}
		out[k] = s
	}
	return out
}

// printTable prints the regime and the results, the matched control first.
func printTable(w io.Writer, sum []summary, sets []Settings) {
	fmt.Fprintf(w, "\nmedians over %d seeds (completions to %.2f: never-reached counts as ∞)\n", len(sets), sets[0].Target)
	fmt.Fprintf(w, "%-17s %12s %10s %8s %9s %10s %9s %8s  %s\n", "run", "completions", "vs match", "reached",
		"final acc", "final hard", "zero-adv", "hard z-a", "rescued")
	fmt.Fprintln(w, strings.Repeat("-", 100))
	var matched float64
	for _, s := range sum {
		if s.Name == "grpo_matched" {
			matched = s.Reach
		}
	}
	order := slices.Clone(sum)
	slices.SortStableFunc(order, func(a, b summary) int {
		rank := func(s summary) int {
			switch s.Name {
			case "grpo_matched":
				return 0
			case "avatar":
				return 1
			}
			return 2
		}
		return rank(a) - rank(b)
	})
	for _, s := range order {
		reach, ratio, rescued := "never", "—", "—"
		if !math.IsInf(s.Reach, 1) {
			reach = fmt.Sprintf("%.0f", s.Reach)
			if !math.IsInf(matched, 1) && matched > 0 {
				ratio = fmt.Sprintf("%.2f×", s.Reach/matched)
			}
		}
		if s.Rescued >= 0 {
			rescued = fmt.Sprintf("%.3f", s.Rescued)
		}
		fmt.Fprintf(w, "%-17s %12s %10s %8s %9.3f %10.3f %9.2f %8.2f  %s\n", s.Name, reach, ratio,
			fmt.Sprintf("%d/%d", s.Reached, s.Seeds), s.Final, s.FinalHard, s.ZeroAdv, s.ZeroHrd, rescued)
	}
	fmt.Fprintf(w, "\ncompletions to %.2f by seed (−1: never)\n", sets[0].Target)
	for _, s := range order {
		fmt.Fprintf(w, "%-17s %v\n", s.Name, s.PerSeed)
	}
}

// printJSON writes the one-line summary: medians over seeds.
func printJSON(w io.Writer, sum []summary, target float64) error {
	type entry struct {
		CompletionsToTarget *float64 `json:"completions_to_target"`
		FinalAccuracy       float64  `json:"final_accuracy"`
		ZeroAdvFraction     float64  `json:"zero_adv_fraction"`
	}
	out := struct {
		Target float64          `json:"target"`
		Runs   map[string]entry `json:"runs"`
	}{Target: target, Runs: map[string]entry{}}
	for _, s := range sum {
		e := entry{FinalAccuracy: round(s.Final), ZeroAdvFraction: round(s.ZeroAdv)}
		if !math.IsInf(s.Reach, 1) {
			n := s.Reach
			e.CompletionsToTarget = &n
		}
		out.Runs[s.Name] = e
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// median of x; +Inf values sort last.
func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
