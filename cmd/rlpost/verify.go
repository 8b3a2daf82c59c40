package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// verifyCmd answers every JSONL request line with an error until the
// verifiers land.
func verifyCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for sc.Scan() {
		out, _ := json.Marshal(map[string]string{"error": "verify: not implemented yet"})
		fmt.Fprintf(w, "%s\n", out)
	}
	return 0
}
