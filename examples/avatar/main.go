// Command avatar tests AVATAR's claim (arXiv 2508.03100) the way the paper
// makes it, on a small pure-Go task, against GRPO twice: as the paper
// compares (GRPO with 8 fresh responses per prompt, against iterations)
// and with a matched budget (GRPO with AVATAR's 4 fresh responses per
// prompt, against generated completions), with one ablation per AVATAR
// component and a sweep of the buffer size (the paper's Fig. 11).
//
// Usage:
//
//	go run ./examples/avatar            # 10 seeds, every run; a table, docs/avatar.png
//	go run ./examples/avatar -quick     # 3 seeds, short runs, no sweep; the last line is JSON
//
// The task (task.go): thousands of prompts drawn from four shared skills,
// answered with 64 tokens of structured reasoning — a plan at the start,
// a synthesis at the end — before a two-digit answer, rewarded with
// AVATAR's stage-1 reward 0.5·R_format + 0.5·R_acc (Eq. 7, and Eq. 8's
// rMAE). Every run starts from the same stage-S0 SFT policy of its seed
// (sft.go) and is scored by exact match on held-out prompts, greedy.
//
// The runs (run.go, avatar.go), all with presets.AVATAR's loss (ε 0.2,
// token mean, k3 KL to π_ref, β 0.1) and one update per step:
//
//	grpo               4 prompts × 8 fresh: the paper's GRPO
//	grpo_matched       4 prompts × 4 fresh: AVATAR's fresh budget
//	avatar             4 prompts × (4 fresh + 4 replayed), presets.AVATAR:
//	                   cross-prompt tiered replay under the curriculum,
//	                   Eq. 11 against the VCRS with no floor, TAS, KL on both
//	                   parts, hinting, a staleness bound
//	avatar_no_tas      … uniform token weights
//	avatar_no_vcrs     … the replayed batch's mean as the baseline
//	avatar_no_replay   … no replayed part (grpo_matched + TAS + hints)
//	avatar_no_hint     … no hints
//	avatar_per_prompt  … replay drawn for each prompt from its own past
//	                   responses first (SampleOptions.ForPrompt)
//	avatar_buf_N       … a buffer of N experiences (full run only)
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

	"github.com/rlpost/rlpost/examples/internal/policy"
)

const hidden = 32

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "avatar:", err)
		os.Exit(1)
	}
}

// settingsFor returns the settings of one seed; quick and full runs share
// them and differ in seeds, steps and runs only.
func settingsFor(seed uint64) Settings {
	return Settings{
		Seed: seed, Steps: 200, EvalEvery: 20,
		PromptsPerStep: 4, GroupSize: 8, OnPolicy: 4, OffPolicy: 4,
		LR: 0.01, Target: 0.45, Train: 2000, Held: 200, SFTSteps: 150,
		Buffer: 10000, MaxStaleness: 100,
	}
}

// The runs: the comparisons, the ablations, and the sweep (full run only).
var (
	mainRuns  = []string{"avatar", "grpo_matched", "grpo"}
	ablations = []string{"avatar_no_tas", "avatar_no_vcrs", "avatar_no_replay", "avatar_no_hint", "avatar_per_prompt"}
)

func sweepRuns() []string {
	var out []string
	for _, n := range bufferSweep {
		out = append(out, sweepVariant(n).name)
	}
	return out
}

// newMethod returns a fresh instance of the named run.
func newMethod(name string, set Settings) (method, error) {
	switch name {
	case "grpo":
		return grpoMethod{name: name, size: set.GroupSize}, nil
	case "grpo_matched":
		return grpoMethod{name: name, size: set.OnPolicy}, nil
	}
	for _, v := range append(avatarVariants, avatarGuarded) {
		if v.name == name {
			return newAvatarMethod(v, set)
		}
	}
	for _, n := range bufferSweep {
		if v := sweepVariant(n); v.name == name {
			return newAvatarMethod(v, set)
		}
	}
	return nil, fmt.Errorf("no run %q", name)
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("avatar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "3 seeds, 40 steps, no buffer sweep; the last stdout line is JSON")
	seed := fs.Uint64("seed", 1, "the first seed")
	seeds := fs.Int("seeds", 0, "seeds (0: 3 with -quick, 10 without)")
	png := fs.String("png", "docs/avatar.png", "where to write the plot (\"\" for none)")
	steps := fs.Int("steps", 0, "training steps per run (0: the mode's)")
	curves := fs.Bool("curves", false, "print every run's held-out accuracy curve of the first seed")
	only := fs.String("runs", "", "comma-separated runs to do instead of the mode's (e.g. grpo,avatar)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seeds < 0 || *steps < 0 {
		return fmt.Errorf("-seeds %d -steps %d: need ≥ 0", *seeds, *steps)
	}
	start := time.Now()
	n, names := 10, slices.Concat(mainRuns, ablations, sweepRuns())
	if *quick {
		n, names = 3, slices.Concat(mainRuns, ablations)
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
		if *quick {
			sets[i].Steps, sets[i].EvalEvery = 40, 10
		}
		if *steps > 0 {
			sets[i].Steps = *steps
		}
	}
	set := sets[0]
	fmt.Fprintf(stdout, "task: %d training + %d held-out prompts of %d skills, %d reasoning tokens; %d steps of %d prompts; target %.2f held-out accuracy; %d seeds × %d runs\n",
		set.Train, set.Held, numSkills, reasoningLen, set.Steps, set.PromptsPerStep, set.Target, n, len(names))
	all, err := experiments(sets, names, stderr)
	if err != nil {
		return err
	}
	sum := summarise(all, names, set.Target)
	printTable(stdout, sum, sets)
	printDiagnostics(stdout, all, names)
	if *curves {
		for k, name := range names {
			fmt.Fprintf(stdout, "%-18s", name)
			for _, pt := range all[0][k].Curve {
				fmt.Fprintf(stdout, " %d:%.2f", pt.Step, pt.Accuracy)
			}
			fmt.Fprintln(stdout)
		}
	}
	if *png != "" {
		if err := plotAll(*png, all, names, sum, set); err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", *png)
	}
	fmt.Fprintf(stdout, "total %.1fs wall\n", time.Since(start).Seconds())
	return printJSON(stdout, sum, set.Target)
}

// seedState is what every run of a seed shares: the world, the prompt
// pool and the S0 policy, computed once.
type seedState struct {
	once  sync.Once
	world World
	pool  []Prompt
	base  *policy.Model
}

func (s *seedState) get(set Settings) *seedState {
	s.once.Do(func() {
		s.world = newWorld(set.Seed)
		s.pool = newPool(set.Seed, &s.world, set.Train, set.Held)
		s.base = sft(set.Seed, &s.world, s.pool, set.SFTSteps)
	})
	return s
}

// experiments runs every named method for every seed, two runs at a time
// on the two cores; all[s][k] is seed s's run of names[k]. Each run is
// independent and single-threaded, so results do not depend on scheduling.
func experiments(sets []Settings, names []string, progressOut io.Writer) ([][]RunResult, error) {
	all := make([][]RunResult, len(sets))
	for i := range all {
		all[i] = make([]RunResult, len(names))
	}
	seeds := make([]seedState, len(sets))
	type job struct{ s, k int }
	errs := make([]error, len(sets)*len(names))
	jobs := make(chan job)
	prog := newProgress(progressOut, len(sets)*len(names))
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				set := sets[j.s]
				label := fmt.Sprintf("seed %2d %-18s", set.Seed, names[j.k])
				bar := prog.start(label, set.Steps)
				t0 := time.Now()
				st := seeds[j.s].get(set)
				m, err := newMethod(names[j.k], set)
				if err == nil {
					all[j.s][j.k], err = train(m, st.base, &st.world, st.pool, set, bar.tick)
				}
				if err != nil {
					err = fmt.Errorf("seed %d %s: %v", set.Seed, names[j.k], err)
				}
				errs[j.s*len(names)+j.k] = err
				bar.done(fmt.Sprintf("final accuracy %.3f, %.1fs", all[j.s][j.k].Final, time.Since(t0).Seconds()), err)
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
	prog.wait()
	return all, errors.Join(errs...)
}

// summary holds one run's statistics over seeds: medians with 95 %
// bootstrap intervals (percentile method over seeds).
type summary struct {
	Name string
	// Reach is the median completions to target, a run that never
	// reached it counting as +∞; ReachSteps the same in steps.
	Reach, ReachLo, ReachHi float64
	ReachSteps              float64
	Reached, Seeds          int
	Final, FinalLo, FinalHi float64
	RMAE                    float64
	ZeroAdv                 float64
}

func summarise(all [][]RunResult, names []string, target float64) []summary {
	out := make([]summary, len(names))
	for k, name := range names {
		s := summary{Name: name, Seeds: len(all)}
		var reach, rsteps, final, rm, zero []float64
		for i := range all {
			r := all[i][k]
			c, st := math.Inf(1), math.Inf(1)
			if r.CompletionsToTarget >= 0 {
				c, st = float64(r.CompletionsToTarget), float64(r.StepsToTarget)
				s.Reached++
			}
			reach, rsteps = append(reach, c), append(rsteps, st)
			final, rm, zero = append(final, r.Final), append(rm, r.FinalRMAE), append(zero, r.ZeroAdv)
		}
		s.Reach, s.ReachLo, s.ReachHi = medianCI(reach, uint64(k))
		s.ReachSteps = median(rsteps)
		s.Final, s.FinalLo, s.FinalHi = medianCI(final, uint64(k))
		s.RMAE, s.ZeroAdv = median(rm), median(zero)
		out[k] = s
	}
	return out
}

func fmtReach(x float64) string {
	if math.IsInf(x, 1) {
		return "never"
	}
	return fmt.Sprintf("%.0f", x)
}

// printTable prints the results, the comparisons first.
func printTable(w io.Writer, sum []summary, sets []Settings) {
	fmt.Fprintf(w, "\nmedians over %d seeds [95%% bootstrap interval]; completions to %.2f held-out accuracy (never-reached counts as ∞)\n",
		len(sets), sets[0].Target)
	fmt.Fprintf(w, "%-18s %-28s %8s %8s %-24s %6s %8s\n", "run", "completions to target", "steps", "reached", "final accuracy", "rMAE", "zero-adv")
	fmt.Fprintln(w, strings.Repeat("-", 108))
	for _, s := range sum {
		fmt.Fprintf(w, "%-18s %-28s %8s %8s %-24s %6.3f %8.3f\n", s.Name,
			fmt.Sprintf("%s [%s, %s]", fmtReach(s.Reach), fmtReach(s.ReachLo), fmtReach(s.ReachHi)),
			fmtReach(s.ReachSteps), fmt.Sprintf("%d/%d", s.Reached, s.Seeds),
			fmt.Sprintf("%.3f [%.3f, %.3f]", s.Final, s.FinalLo, s.FinalHi), s.RMAE, s.ZeroAdv)
	}
}

// printDiagnostics prints AVATAR's diagnostics: medians over seeds, and
// the first seed's tier occupancy over time.
func printDiagnostics(w io.Writer, all [][]RunResult, names []string) {
	fmt.Fprintf(w, "\nreplay diagnostics (medians over seeds): share of |A_off| from accuracy (vs format); replayed wrong answers with A_off > 0;\n")
	fmt.Fprintf(w, "replay age and importance ratio (p10/p50/p90); max |A_off|; min σ_off; fresh groups rescued by own-prompt replay; hints\n")
	fmt.Fprintf(w, "%-18s %8s %8s %-18s %-20s %9s %8s %14s %6s\n", "run", "acc share", "pos wrong", "age", "ratio", "max|A|", "min σ", "rescued", "hints")
	for k, name := range names {
		if all[0][k].Diag == nil || all[0][k].Diag.Age == [3]float64{} {
			continue
		}
		get := func(f func(d *Diagnostics) float64) float64 {
			var x []float64
			for i := range all {
				x = append(x, f(all[i][k].Diag))
			}
			return median(x)
		}
		q := func(f func(d *Diagnostics) [3]float64) (out [3]float64) {
			for j := range out {
				out[j] = get(func(d *Diagnostics) float64 { return f(d)[j] })
			}
			return out
		}
		age, ratio := q(func(d *Diagnostics) [3]float64 { return d.Age }), q(func(d *Diagnostics) [3]float64 { return d.Ratio })
		fmt.Fprintf(w, "%-18s %8.3f %8.3f %-18s %-20s %9.3g %8.3g %14s %6.0f\n", name,
			get(func(d *Diagnostics) float64 { return d.AccShare }), get(func(d *Diagnostics) float64 { return d.PosWrong }),
			fmt.Sprintf("%.0f/%.0f/%.0f", age[0], age[1], age[2]), fmt.Sprintf("%.3f/%.3f/%.3f", ratio[0], ratio[1], ratio[2]),
			get(func(d *Diagnostics) float64 { return d.MaxAbsAdv }), get(func(d *Diagnostics) float64 { return d.MinStd }),
			fmt.Sprintf("%.0f/%.0f", get(func(d *Diagnostics) float64 { return float64(d.Rescued) }), get(func(d *Diagnostics) float64 { return float64(d.Vanished) })),
			get(func(d *Diagnostics) float64 { return float64(d.Hints) }))
	}
	for k, name := range names {
		if name != "avatar" || all[0][k].Diag == nil {
			continue
		}
		fmt.Fprintf(w, "\navatar, seed %d: buffer tiers easy/medium/hard over steps\n", 1)
		for _, tp := range all[0][k].Diag.Tiers {
			fmt.Fprintf(w, "  step %4d  %5d / %5d / %5d\n", tp.Step, tp.Len[0], tp.Len[1], tp.Len[2])
		}
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
