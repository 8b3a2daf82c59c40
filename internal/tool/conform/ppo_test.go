package conform_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/tool/conform"
)

// TestPolicyLossPresets runs ppo's hand-worked preset batch through the
// JSON contract: "preset" picks the base configuration, fields override it.
func TestPolicyLossPresets(t *testing.T) {
	const batch = `"logp": [[-1, -2]], "old_logp": [[-2.386294361119891, -2]], "advantages": [[-1, 1]], "mask": [[1, 1]]`
	const ref = `, "ref_logp": [[11, -2]]` // read only with a kl_coef
	for _, c := range []struct {
		req  string
		loss float64
	}{
		{`{"op": "policy_loss", ` + batch + `}`, 4.0/2 - 0.5},                                                 // rlpost: no dual clip
		{`{"op": "policy_loss", "preset": "verl", ` + batch + `}`, 1},                                         // verl: dual clip 3
		{`{"op": "policy_loss", "preset": "verl", ` + batch + ref + `, "config": {"kl_coef": 0.001}}`, 1.005}, // low_var_kl at 10
		{`{"op": "policy_loss", "preset": "verl", ` + batch + `, "config": {"dual_clip": 0}}`, 1.5},           // overridden
		{`{"op": "policy_loss", "preset": "trl", ` + batch + `}`, 1.5},
	} {
		out, err := conform.Run([]byte(c.req))
		require.NoError(t, err, c.req)
		resp := out.(conform.PolicyLossResponse)
		assert.InDelta(t, c.loss, resp.Loss, 1e-12, c.req)
		assert.Contains(t, resp.Stats.Metrics, "actor/pg_clipfrac_lower")
	}
	_, err := conform.Run([]byte(`{"op": "policy_loss", "preset": "openrlhf", ` + batch + `}`))
	assert.ErrorContains(t, err, "preset")
	_, err = conform.Run([]byte(`{"op": "policy_loss", ` + batch + ref + `}`))
	assert.ErrorContains(t, err, "ref_logp: out of range: given, but Config.KLCoef is 0", "an unread ref_logp")
}
