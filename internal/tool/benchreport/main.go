// Command benchreport regenerates the measured blocks of BENCHMARKS.md, so
// that the file holds current figures only and each says how it was made.
//
// A block is the text between two markers in the file:
//
//	<!-- bench NAME: COMMAND -->
//	...generated...
//	<!-- end bench NAME -->
//
// benchreport runs COMMAND with sh from the repository root, under a time
// limit, and replaces the text between the markers with a line saying when,
// where (CPU model, cores, load average, Go version) and with which command
// it was measured, followed by the command's markdown table if it printed
// one (its lines starting with "|") or else its whole output as a text
// block. Everything outside the blocks — the prose that explains them — is
// left as it is. A command that fails leaves its block unchanged and makes
// benchreport exit 1 after the others ran.
//
// Usage, from the repository root:
//
//	go run ./internal/tool/benchreport                # every block
//	go run ./internal/tool/benchreport -only cpu,replay
//	go run ./internal/tool/benchreport -list          # the blocks and their commands
//
// Blocks whose figures need hardware this machine lacks (the GPU section,
// written by cuda/bench/device.sh) are plain text, not blocks.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// block is one measured section of the file.
type block struct {
	name, command string
	start, end    int // byte offsets of the generated text
}

var (
	beginRE = regexp.MustCompile(`(?m)^<!-- bench ([a-z0-9_-]+): (.+) -->\n`)
	endFmt  = "<!-- end bench %s -->"
)

// parse finds the blocks of text.
func parse(text string) ([]block, error) {
	var blocks []block
	seen := map[string]bool{}
	for _, m := range beginRE.FindAllStringSubmatchIndex(text, -1) {
		b := block{name: text[m[2]:m[3]], command: text[m[4]:m[5]], start: m[1]}
		if seen[b.name] {
			return nil, fmt.Errorf("block %q appears twice", b.name)
		}
		seen[b.name] = true
		end := strings.Index(text[b.start:], fmt.Sprintf(endFmt, b.name))
		if end < 0 {
			return nil, fmt.Errorf("block %q has no %q", b.name, fmt.Sprintf(endFmt, b.name))
		}
		b.end = b.start + end
		if len(blocks) > 0 && b.start < blocks[len(blocks)-1].end {
			return nil, fmt.Errorf("block %q starts inside block %q", b.name, blocks[len(blocks)-1].name)
		}
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		return nil, errors.New("no <!-- bench NAME: COMMAND --> blocks")
	}
	return blocks, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "BENCHMARKS.md", "the file whose blocks to regenerate")
	only := fs.String("only", "", "comma-separated block names to regenerate (default all)")
	list := fs.Bool("list", false, "list the blocks and their commands, and exit")
	limit := fs.Duration("timeout", 15*time.Minute, "time limit of one block's command")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintf(stderr, "benchreport: %v\n", err)
		return 1
	}
	text := string(data)
	blocks, err := parse(text)
	if err != nil {
		fmt.Fprintf(stderr, "benchreport: %s: %v\n", *file, err)
		return 1
	}
	if *list {
		for _, b := range blocks {
			fmt.Fprintf(stdout, "%-12s %s\n", b.name, b.command)
		}
		return 0
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	for n := range want {
		if !hasBlock(blocks, n) {
			fmt.Fprintf(stderr, "benchreport: -only: no block %q in %s\n", n, *file)
			return 2
		}
	}
	// Replace from the last block back, so earlier offsets stay valid.
	code := 0
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		if len(want) > 0 && !want[b.name] {
			continue
		}
		fmt.Fprintf(stderr, "benchreport: %s: %s\n", b.name, b.command)
		out, err := measure(b.command, *limit)
		if err != nil {
			fmt.Fprintf(stderr, "benchreport: %s: %v (block left as it was)\n%s", b.name, err, tail(out, 2000))
			code = 1
			continue
		}
		text = text[:b.start] + render(b.command, out) + text[b.end:]
		// Write after each block, so that a later failure or an interrupt
		// keeps what was measured.
		if err := os.WriteFile(*file, []byte(text), 0o644); err != nil {
			fmt.Fprintf(stderr, "benchreport: %v\n", err)
			return 1
		}
	}
	return code
}

func hasBlock(blocks []block, name string) bool {
	for _, b := range blocks {
		if b.name == name {
			return true
		}
	}
	return false
}

// measure runs command with sh and returns its standard output.
func measure(command string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("over the %v limit", limit)
	}
	return out.String(), err
}

// render is a block's new text: where and how it was measured, then the
// command's table or its output.
func render(command, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s, command `%s`:\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), command)
	var table []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			table = append(table, line)
		}
	}
	if len(table) >= 2 {
		b.WriteString(strings.Join(table, "\n"))
		b.WriteString("\n")
		return b.String()
	}
	b.WriteString("```text\n")
	b.WriteString(strings.TrimRight(out, "\n"))
	b.WriteString("\n```\n")
	return b.String()
}

// machine describes this machine: CPU model, cores, load average, Go.
func machine() string {
	cpu := runtime.GOARCH
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	load := ""
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			load = fmt.Sprintf(", load average %s %s %s", f[0], f[1], f[2])
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s %s/%s", cpu, runtime.NumCPU(), load, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func tail(s string, n int) string {
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
