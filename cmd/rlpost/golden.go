package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rlpost/rlpost/internal/tool/golden"
)

// goldenCmd checks golden request/expected pairs by running `rlpost conform`
// as a separate process for every request, exactly as another team's harness
// would, and comparing the response with the expectation (numbers within
// golden.RelTol relative). Ops this build does not implement are skipped,
// or counted as failures with -strict.
func goldenCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("golden", stderr)
	bin := fs.String("bin", "", "rlpost binary to run (default: this one)")
	strict := fs.Bool("strict", false, "count ops that are not implemented as failures")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "rlpost golden: name one or more golden .jsonl files")
		return 2
	}
	if *bin == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "rlpost golden: %v\n", err)
			return 2
		}
		*bin = exe
	}
	var passed, failed, skipped int
	for _, path := range fs.Args() {
		op := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		cases, err := golden.Read(filepath.Dir(path), op)
		if err != nil {
			fmt.Fprintf(stderr, "rlpost golden: %v\n", err)
			return 2
		}
		var p, f, s int
		for _, c := range cases {
			err := checkCase(*bin, c)
			switch {
			case err == nil:
				p++
			case errors.Is(err, errSkipped) && !*strict:
				s++
			default:
				f++
				fmt.Fprintf(stdout, "FAIL %s:%d: %v\n", filepath.Base(path), c.Line, err)
			}
		}
		fmt.Fprintf(stdout, "%s: %d passed, %d failed, %d skipped\n", filepath.Base(path), p, f, s)
		passed, failed, skipped = passed+p, failed+f, skipped+s
	}
	fmt.Fprintf(stdout, "golden: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 {
		return 1
	}
	return 0
}

var errSkipped = errors.New("op not implemented in this build")

func checkCase(bin string, c golden.Case) error {
	cmd := exec.Command(bin, "conform")
	cmd.Stdin = bytes.NewReader(c.Request)
	var out bytes.Buffer
	cmd.Stdout = &out
	runErr := cmd.Run()
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		return fmt.Errorf("response is not a JSON object (%v): %q", runErr, out.String())
	}
	if msg, ok := got["error"]; ok {
		if s, _ := msg.(string); strings.Contains(s, "not implemented yet") {
			return errSkipped
		}
		return fmt.Errorf("error response: %v", msg)
	}
	if runErr != nil {
		return fmt.Errorf("exit: %v", runErr)
	}
	var want map[string]any
	if err := json.Unmarshal(c.Expected, &want); err != nil {
		return fmt.Errorf("expected: %v", err)
	}
	return match(got, want, "")
}

// match reports the first place where got differs from want: every field of
// want must be in got, numbers within the golden tolerance, arrays of the
// same length.
func match(got, want any, path string) error {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		if !ok {
			return fmt.Errorf("%s: got %v, want the number %v", path, got, w)
		}
		if !golden.Close(g, w) {
			return fmt.Errorf("%s = %.10g, want %.10g", path, g, w)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: got %v, want %d elements", path, got, len(w))
		}
		for i := range w {
			if err := match(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %v, want an object", path, got)
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := match(gv, v, path+"."+k); err != nil {
				return err
			}
		}
	default:
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
	return nil
}
