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
// Every command answers -h with its usage. On bad input conform prints
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
// because the commands' flag sets refer back to synopses.
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

// synopses holds each command's usage line and what it does.
var synopses = map[string]string{
	"conform": "rlpost conform < request.json\n\nReads one JSON request on stdin and writes one JSON response on stdout\n(docs/conformance.md). On bad input it prints {\"error\": ...} and exits 2.",
	"verify":  "rlpost verify [flags] < requests.jsonl\n\nReads {\"verifier\", \"gold\", \"pred\", \"params\"} lines on stdin and writes one\nresult line per input line, in order (docs/conformance.md).",
	"bench":   "rlpost bench -op OP [flags]\n\nMeasures one hot path on a seeded random batch and prints one JSON line\n(docs/conformance.md).",
	"golden":  "rlpost golden [flags] FILE.jsonl...\n\nRuns every request of each file through `rlpost conform` in a separate process\nand compares the response with the expectation (relative 1e-4).",
	"serve":   "rlpost serve [flags]\n\nServes the verifiers over HTTP for RL trainers: POST /verify, /openrlhf, /slime,\nGET /healthz, /metrics (docs/conformance.md). Stops gracefully on SIGTERM.\nWith -loadtest it measures a server of its own on 127.0.0.1 and exits.",
	"version": "rlpost version\n\nPrints the module version, the VCS revision it was built from, and the Go version.",
}

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
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		if _, ok := commands[args[1]]; !ok {
			fmt.Fprintf(stderr, "rlpost help: unknown command %q\n%s", args[1], usage)
			return 2
		}
		return commands[args[1]]([]string{"-h"}, stdin, stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "rlpost: unknown command %q\n%s", args[0], usage)
		return 2
	}
	return c(args[1:], stdin, stdout, stderr)
}

// newFlags returns the flag set of command name, whose usage prints the
// command's synopsis and flags.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n", synopses[name])
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(fs.Output(), "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
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
