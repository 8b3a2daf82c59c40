package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rlpost/rlpost/internal/tool/conform"
)

// maxRequest bounds what conform reads, so a runaway producer cannot
// exhaust memory.
const maxRequest = 1 << 30

func conformCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("conform", stderr)
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if fs.NArg() != 0 {
		return writeError(stdout, fmt.Errorf("conform takes no arguments; send the request on stdin"))
	}
	req, err := io.ReadAll(io.LimitReader(stdin, maxRequest+1))
	if err != nil {
		return writeError(stdout, fmt.Errorf("reading stdin: %v", err))
	}
	if len(req) > maxRequest {
		return writeError(stdout, fmt.Errorf("request larger than %d bytes", maxRequest))
	}
	resp, err := conform.Run(req)
	if err != nil {
		return writeError(stdout, err)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		// Only a NaN or Inf can fail here, and the library never returns
		// one; say so rather than print half a line.
		return writeError(stdout, fmt.Errorf("encoding the response: %v", err))
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// writeError prints {"error": msg} and returns exit code 2.
func writeError(w io.Writer, err error) int {
	out, _ := json.Marshal(map[string]string{"error": err.Error()})
	fmt.Fprintf(w, "%s\n", out)
	return 2
}
