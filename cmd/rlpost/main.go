// Command rlpost is how other teams and scripts use rlpost without writing
// Go: it answers the JSON contract of CONFORMANCE.md, verifies model output,
// and measures the hot paths.
//
// Usage:
//
//	rlpost conform < request.json       one JSON request in, one JSON response out
//	rlpost verify  < requests.jsonl     one result line per request line
//	rlpost bench -op OP [-B 64 -T 4096 -iters 20 -device cpu]
//	rlpost golden [-bin PATH] FILE.jsonl...
//	                                    check golden request/expected pairs
//	                                    through `rlpost conform`
//	rlpost serve [-addr 127.0.0.1:8700 ...] the verifiers as an HTTP reward service
//
// On bad input conform prints {"error": "..."} and exits 2; verify reports
// errors per line and goes on.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage:
  rlpost conform < request.json
  rlpost verify < requests.jsonl
  rlpost bench -op OP [-B 64] [-T 4096] [-iters 20] [-device cpu|cuda]
  rlpost golden [-bin PATH] [-strict] FILE.jsonl...
  rlpost serve [-addr 127.0.0.1:8700] [-workers N] [-timeout 2s] [-token-file F] [-verifier math] ...
  rlpost serve -loadtest [-duration 3s] [-batches 1,64,1000] [-conns 1,4]
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "conform":
		return conformCmd(args[1:], stdin, stdout)
	case "verify":
		return verifyCmd(args[1:], stdin, stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "golden":
		return goldenCmd(args[1:], stdout, stderr)
	case "serve":
		return serveCmd(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "rlpost: unknown command %q\n%s", args[0], usage)
	return 2
}
