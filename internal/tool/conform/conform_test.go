package conform_test

import (
	"encoding/json"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
)

// FuzzRun: any request bytes give an error or a response that encodes as
// JSON (so carries no NaN or Inf), never a panic.
func FuzzRun(f *testing.F) {
	if dir, err := golden.Dir(); err == nil {
		for _, op := range conform.Ops() {
			cases, err := golden.Read(dir, op)
			if err != nil {
				continue
			}
			for _, c := range cases[:min(3, len(cases))] {
				f.Add([]byte(c.Request))
			}
		}
	}
	f.Add([]byte(`{"op": "policy_loss", "logp": [[-1]], "old_logp": [[-1]], "mask": [[1]], "advantages": [[1]]}`))
	f.Add([]byte(`{"op": "group_advantages", "rewards": [1, 2, 3, 4], "group_ids": [0, 1, 0, 1]}`))
	f.Fuzz(func(t *testing.T, req []byte) {
		resp, err := conform.Run(req)
		if err != nil {
			return
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("response does not encode: %v", err)
		}
	})
}
