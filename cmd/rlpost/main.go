// Command rlpost is how other teams and scripts use rlpost without writing
// Go: it answers the JSON contract of docs/conformance.md, verifies model
// output, and measures the hot paths.
//
// Usage:
//
//	rlpost conform < request.json       one JSON request in, one JSON response out
//	rlpost verify  < requests.jsonl     one result line per request line
//	rlpost bench -op OP [-B 64 -T 4096 -iters 20 -device cpu]
//	rlpost golden [-bin PATH] [-strict] FILE.jsonl...
//	                                    check golden request/expected pairs
//	                                    through `rlpost conform`
//	rlpost serve [-addr 127.0.0.1:8700 ...] the verifiers as an HTTP reward service
//	rlpost version                      the module version and build
//	rlpost help [COMMAND]               usage, of the tool or of one command
//
// Every command answers -h, and "rlpost help COMMAND", with its usage,
// its flags once each, and an example. On bad input conform prints
// {"error": "..."} and exits 2; verify reports errors per line and goes on.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

const usage = `rlpost: RL post-training math over JSON (docs/conformance.md)

usage:
  rlpost conform < request.json      answer one conformance request
  rlpost verify [-timeout 30s] < requests.jsonl
                                     score model output, one line per request
  rlpost bench -op OP [-B 64] [-T 4096] [-iters 20] [-device cpu|cuda]
                                     measure a hot path (ns per token, allocs)
  rlpost golden [-bin PATH] [-strict] FILE.jsonl...
                                     check request/expected pairs through conform
  rlpost serve [-addr 127.0.0.1:8700] [-workers N] [-timeout 2s] [-token-file F] [-verifier math]
                                     the verifiers as an HTTP reward service
  rlpost version                     print the module version and build
  rlpost help [COMMAND]              print this, or one command's usage

Run "rlpost COMMAND -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// commands maps each command to its entry point. It is filled in init
// because the commands' usage refers back to the command table.
var commands map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int

func init() {
	commands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
		"conform": conformCmd,
		"verify":  verifyCmd,
		"bench":   func(a []string, _ io.Reader, out, errw io.Writer) int { return benchCmd(a, out, errw) },
		"golden":  func(a []string, _ io.Reader, out, errw io.Writer) int { return goldenCmd(a, out, errw) },
		"version": func(a []string, _ io.Reader, out, errw io.Writer) int { return versionCmd(a, out, errw) },
		"serve":   func(a []string, _ io.Reader, out, errw io.Writer) int { return serveCmd(a, out, errw) },
	}
}

// docs holds each command's usage line, what it does, and an example; the
// usage printed by -h and by "rlpost help COMMAND" is built from it.
var docs = map[string]struct{ synopsis, about, example string }{
	"conform": {
		"rlpost conform < request.json",
		"Reads one JSON request on stdin and writes one JSON response on stdout\n(docs/conformance.md). On bad input it prints {\"error\": ...} and exits 2.",
		`echo '{"op":"group_advantages","rewards":[1,0,1,1],"group_size":4,"config":{"estimator":"grpo"}}' | rlpost conform`,
	},
	"verify": {
		"rlpost verify [flags] < requests.jsonl",
		"Reads {\"verifier\", \"gold\", \"pred\", \"params\"} lines on stdin and writes one\nresult line per input line, in order (docs/conformance.md).",
		`echo '{"verifier":"math","gold":"42","pred":"<answer>\\boxed{42}</answer>"}' | rlpost verify`,
	},
	"bench": {
		"rlpost bench -op OP [flags]",
		"Measures one hot path on a seeded random batch and prints one JSON line\n(docs/conformance.md).",
		"rlpost bench -op policy_loss -B 64 -T 4096 -iters 100\n  rlpost bench -compare c -rounds 5",
	},
	"golden": {
		"rlpost golden [flags] FILE.jsonl...",
		"Runs every request of each file through `rlpost conform` in a separate process\nand compares the response with the expectation (relative 1e-4).",
		"rlpost golden -strict testdata/golden/*.jsonl",
	},
	"serve": {
		"rlpost serve [flags]",
		"Serves the verifiers over HTTP for RL trainers: POST /verify, /openrlhf, /slime,\nGET /healthz, /metrics (docs/conformance.md). Stops gracefully on SIGTERM.\nWith -loadtest it measures a server of its own on 127.0.0.1 and exits.",
		"rlpost serve -addr 127.0.0.1:8700 -verifier math",
	},
	"version": {
		"rlpost version",
		"Prints the module version, the VCS revision it was built from, and the Go version.",
		"rlpost version",
	},
	"help": {
		"rlpost help [COMMAND]",
		"Prints the tool's usage, or one command's.",
		"rlpost help serve",
	},
}

// extraHelp holds text a command adds after its flags (bench: its ops).
var extraHelp = map[string]func() string{}

// run is main without the process: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "help":
		return helpCmd(args[1:], stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "rlpost: unknown command %q\n%s", args[0], usage)
		return 2
	}
	return c(args[1:], stdin, stdout, stderr)
}

// helpCmd prints the tool's usage, or with a command's name its usage.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("help", stderr)
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	switch fs.NArg() {
	case 0:
		fmt.Fprint(stdout, usage)
		return 0
	case 1:
		name := fs.Arg(0)
		if _, ok := commands[name]; !ok && name != "help" {
			fmt.Fprintf(stderr, "rlpost help: unknown command %q\n%s", name, usage)
			return 2
		}
		if name == "help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return commands[name]([]string{"-h"}, nil, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "rlpost help: one command at most, got %q\n", fs.Args())
		return 2
	}
}

// newFlags returns the flag set of command name, whose usage prints the
// command's synopsis, what it does, its flags (each once) and an example.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		d := docs[name]
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n\n%s\n", d.synopsis, d.about)
		printFlags(w, fs)
		if f := extraHelp[name]; f != nil {
			fmt.Fprintf(w, "\n%s\n", f())
		}
		if d.example != "" {
			fmt.Fprintf(w, "\nexample:\n  %s\n", d.example)
		}
	}
	return fs
}

// printFlags lists fs's flags like flag.PrintDefaults, except that a default
// the usage text already states is not printed a second time.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		kind, text := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if kind != "" {
			line += " " + kind
		}
		line += "\n    \t" + strings.ReplaceAll(text, "\n", "\n    \t")
		if !strings.Contains(text, "(default") && !isZeroDefault(f) {
			if kind == "string" {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w, line)
	})
}

// isZeroDefault reports whether f's default is its type's zero value, which
// flag.PrintDefaults leaves unsaid too.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// parseFlags parses args like a Go tool: -h prints the usage on stdout and
// the command exits 0; a bad flag prints it on stderr and exits 2. done
// reports that the command should return code now.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	errw := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(errw)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(errw)
		return 0, true
	case err != nil:
		fmt.Fprintf(errw, "rlpost %s: %v\n", fs.Name(), err)
		fs.Usage()
		return 2, true
	}
	return 0, false
}

// versionCmd prints the module version as the Go toolchain recorded it
// ("(devel)" for a build from a checkout), the VCS revision and the Go
// version.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", stderr)
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "rlpost version: takes no arguments\n")
		return 2
	}
	fmt.Fprintln(stdout, versionString())
	return 0
}

func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "rlpost (no build information)"
	}
	v := "rlpost " + info.Main.Version
	var extra []string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			extra = append(extra, s.Value)
		case "vcs.modified":
			if s.Value == "true" {
				extra = append(extra, "modified")
			}
		}
	}
	extra = append(extra, info.GoVersion)
	return v + " (" + strings.Join(extra, ", ") + ")"
}
