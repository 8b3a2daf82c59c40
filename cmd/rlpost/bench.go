package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rlpost/rlpost/internal/bench"
)

func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", stderr)
	op := fs.String("op", "", "op to measure (policy_loss, group_advantages, ...)")
	b := fs.Int("B", 64, "sequences in the batch")
	t := fs.Int("T", 4096, "padded length")
	iters := fs.Int("iters", 20, "timed calls after two warm-up calls")
	device := fs.String("device", "cpu", "cpu, or cuda where built with -tags cuda")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if *op == "" || fs.NArg() != 0 {
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
