package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rlpost/rlpost/internal/tool/bench"
)

func init() {
	extraHelp["bench"] = func() string {
		text := "ops on the cpu: " + strings.Join(bench.Ops("cpu"), ", ")
		if ops := bench.Ops("cuda"); len(ops) > 0 {
			text += "\nops on cuda: " + strings.Join(ops, ", ")
		} else {
			text += "\nops on cuda: none in this build (build with -tags cuda)"
		}
		return text
	}
}

func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", stderr)
	op := fs.String("op", "", "op to measure (policy_loss, group_advantages, ...); with -compare c, a comma-separated list or empty for all")
	b := fs.Int("B", 64, "sequences in the batch")
	t := fs.Int("T", 4096, "padded length")
	iters := fs.Int("iters", 20, "timed calls after two warm-up calls")
	device := fs.String("device", "cpu", "cpu, or cuda where built with -tags cuda")
	compare := fs.String("compare", "", "c: alternate rounds of rlpost and the in-repo C reference (internal/tool/bench/cref/ref.c, built with cc) and print a table")
	rounds := fs.Int("rounds", 3, "rounds of -compare c")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "rlpost bench: unexpected arguments %v\n", fs.Args())
		return 2
	}
	switch *compare {
	case "":
	case "c":
		return compareC(*op, *b, *t, *iters, *rounds, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "rlpost bench: -compare %q: only c is known\n", *compare)
		return 2
	}
	if *op == "" {
		fmt.Fprintf(stderr, "rlpost bench: need -op (one of %v) and no other arguments\n", bench.Ops(*device))
		return 2
	}
	res, err := bench.Run(*op, *device, *b, *t, *iters)
	if err != nil {
		return writeError(stdout, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return writeError(stdout, err)
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// compareC prints the -compare c table: per op the median ns/token of
// rlpost and of the C reference over the rounds, their ratio, rlpost's
// allocations per call and the largest difference of the outputs.
func compareC(ops string, b, t, iters, rounds int, stdout, stderr io.Writer) int {
	list := bench.CompareOps
	if ops != "" {
		list = strings.Split(ops, ",")
	}
	res, err := bench.CompareC(list, b, t, iters, rounds, bench.Threads(), stderr)
	if err != nil {
		return writeError(stdout, err)
	}
	fmt.Fprintf(stdout, "| op (B=%d, T=%d, %d rounds × %d calls) | rlpost ns/token | C ns/token | rlpost / C (medians) | rlpost / C (best) | rlpost allocs/call | max |rlpost − C| |\n", b, t, rounds, iters)
	fmt.Fprintf(stdout, "|---|---|---|---|---|---|---|\n")
	for _, c := range res {
		extra := ""
		if c.Op == "policy_loss" {
			extra = fmt.Sprintf(" (loss %.3g vs %.3g)", c.LossRlpost, c.LossC)
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %.2f | %.2f | %.2f | %.2g%s |\n", c.Op, span(c.Rlpost), span(c.C), c.RatioOfMedians, c.RatioOfBest, c.AllocsPerIter, c.MaxAbsErr, extra)
	}
	return 0
}

// span formats the median of xs and their range.
func span(xs []float64) string {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", bench.Median(xs), lo, hi)
}
