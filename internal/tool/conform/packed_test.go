package conform_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/tensor"
)

// respond runs a request and returns its response as generic JSON.
func respond(t *testing.T, req string) map[string]any {
	t.Helper()
	out, err := conform.Run([]byte(req))
	require.NoError(t, err, req)
	b, err := json.Marshal(out)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// flatten concatenates the first lengths[b] entries of each padded row, the
// packed form of a padded response field.
func flatten(rows any, lengths []int) []any {
	var flat []any
	for b, r := range rows.([]any) {
		flat = append(flat, r.([]any)[:lengths[b]]...)
	}
	return flat
}

// TestPackedRequests: a policy_loss or gae request with cu_seqlens and flat
// arrays answers with flat arrays holding exactly the numbers the same
// rows padded give (rows of 3, 0, 1 and 2 tokens).
func TestPackedRequests(t *testing.T) {
	lengths := []int{3, 0, 1, 2}
	for _, c := range []struct{ name, padded, packed, field string }{
		{"policy_loss",
			`{"op": "policy_loss", "logp": [[-1, -0.5, -2], [0, 0, 0], [-0.3, 9, 9], [-1.5, -0.1, 9]],
			  "old_logp": [[-1.1, -0.4, -2], [0, 0, 0], [-0.2, 0, 0], [-1.4, -0.3, 0]],
			  "advantages": [[1, 1, 1], [0, 0, 0], [-0.5, 0, 0], [2, 2, 0]],
			  "mask": [[1, 0, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]],
			  "entropy": [[1, 2, 3], [0, 0, 0], [0.5, 0, 0], [1, 1, 0]],
			  "config": {"agg": "seq-mean-token-sum-norm", "entropy_coeff": 0.01}}`,
			`{"op": "policy_loss", "cu_seqlens": [0, 3, 3, 4, 6],
			  "logp": [-1, -0.5, -2, -0.3, -1.5, -0.1], "old_logp": [-1.1, -0.4, -2, -0.2, -1.4, -0.3],
			  "advantages": [1, 1, 1, -0.5, 2, 2], "mask": [1, 0, 1, 1, 1, 1],
			  "entropy": [1, 2, 3, 0.5, 1, 1],
			  "config": {"agg": "seq-mean-token-sum-norm", "entropy_coeff": 0.01}}`,
			"grad"},
		{"gae",
			`{"op": "gae", "rewards": [[0, 0, 1], [0, 0, 0], [2, 0, 0], [0, -1, 0]], "values": [[0.1, 0.2, 0.3], [0, 0, 0], [0.5, 0, 0], [0.2, 0.1, 0]],
			  "mask": [[1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]], "config": {"gamma": 0.9, "lam": 0.8, "whiten": true}}`,
			`{"op": "gae", "cu_seqlens": [0, 3, 3, 4, 6], "rewards": [0, 0, 1, 2, 0, -1], "values": [0.1, 0.2, 0.3, 0.5, 0.2, 0.1],
			  "mask": [1, 1, 1, 1, 1, 1], "config": {"gamma": 0.9, "lam": 0.8, "whiten": true}}`,
			"advantages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, got := respond(t, c.padded), respond(t, c.packed)
			for k, v := range want {
				switch rows := v.(type) {
				case []any:
					assert.Equal(t, flatten(rows, lengths), got[k], k)
				default:
					assert.Equal(t, v, got[k], k)
				}
			}
			assert.Len(t, got[c.field], 6)
		})
	}
}

func TestPackedRequestErrors(t *testing.T) {
	for _, c := range []struct {
		req, want string
		kind      error
	}{
		{`{"op": "gae", "rewards": [0, 1], "values": [0, 1], "mask": [1, 1]}`, "needs cu_seqlens", tensor.ErrShape},
		{`{"op": "gae", "cu_seqlens": [0, 2], "rewards": [[0, 1]], "values": [0, 1], "mask": [1, 1]}`, "flat list", tensor.ErrShape},
		{`{"op": "gae", "cu_seqlens": [0, 3], "rewards": [0, 1], "values": [0, 1], "mask": [1, 1]}`, "rewards", tensor.ErrShape},
		{`{"op": "gae", "cu_seqlens": [0, 2, 1, 2], "rewards": [0, 1], "values": [0, 1], "mask": [1, 1]}`, "cu_seqlens[2]", tensor.ErrRange},
		{`{"op": "policy_loss", "cu_seqlens": [0, 2], "logp": [0, 1], "old_logp": [0, 1], "advantages": [1, 1], "mask": [1, 1, 1]}`, "mask", tensor.ErrShape},
	} {
		_, err := conform.Run([]byte(c.req))
		require.ErrorIs(t, err, c.kind, c.req)
		assert.ErrorContains(t, err, c.want, c.req)
	}
	_, err := conform.Run([]byte(`{"op": "gae", "rewards": [0, "x"], "values": [[0]], "mask": [[1]]}`))
	assert.ErrorContains(t, err, `gae: rewards[1]: the string "x" is not a number`)
	assert.ErrorIs(t, err, conform.ErrType)
}
