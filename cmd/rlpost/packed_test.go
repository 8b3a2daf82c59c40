package main

import (
	"encoding/json"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packedFields are the per-token fields of the ops that accept cu_seqlens,
// in requests and in responses.
var packedFields = map[string][]string{
	"policy_loss": {"logp", "old_logp", "mask", "advantages", "prox_logp", "ref_logp", "token_weights", "entropy", "rollout_logp",
		"grad", "entropy_grad"},
	"gae": {"rewards", "values", "mask", "advantages", "returns"},
}

// pack rewrites the per-token fields of obj as flat lists of the first
// lengths[b] entries of each row.
func pack(obj map[string]any, fields []string, lengths []int) {
	for _, f := range fields {
		rows, ok := obj[f].([]any)
		if !ok {
			continue
		}
		flat := []any{}
		for b, r := range rows {
			flat = append(flat, r.([]any)[:lengths[b]]...)
		}
		obj[f] = flat
	}
}

// TestConformPackedGolden sends every golden policy_loss and gae case a
// second time packed: each row cut after its last valid token (row 0 kept
// whole, so T stays the longest row), flat lists with cu_seqlens. The
// response must be the padded response, cut the same way, to the bit.
func TestConformPackedGolden(t *testing.T) {
	for op, fields := range packedFields {
		cases, shortened := 0, 0
		for _, c := range golden.Load(t, op) {
			cases++
			var req map[string]any
			require.NoError(t, json.Unmarshal(c.Request, &req))
			mask := req["mask"].([]any)
			lengths, cu := make([]int, len(mask)), []int{0}
			for b, r := range mask {
				row := r.([]any)
				for t, m := range row {
					if m.(float64) != 0 || b == 0 {
						lengths[b] = t + 1
					}
				}
				cu = append(cu, cu[b]+lengths[b])
				if lengths[b] < len(row) {
					shortened++
				}
			}
			code, out, _ := runCmd(t, string(c.Request), "conform")
			require.Equal(t, 0, code, "%s:%d: exit: %s", op, c.Line, out)
			var want map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &want))
			pack(want, fields, lengths)
			pack(req, fields, lengths)
			req["cu_seqlens"] = cu
			body, _ := json.Marshal(req)
			code, out, _ = runCmd(t, string(body), "conform")
			require.Equal(t, 0, code, "%s:%d packed: exit: %s", op, c.Line, out)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			assert.Equal(t, want, got, "%s:%d packed with cu_seqlens %v: want", op, c.Line, cu)
		}
		t.Logf("%s: %d cases, %d rows shortened", op, cases, shortened)
		if cases == 0 || shortened == 0 {
			t.Errorf("%s: %d cases with %d rows shortened; the test tests nothing", op, cases, shortened)
		}
	}
}
