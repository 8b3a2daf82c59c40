package conform_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlpost/rlpost/internal/tool/conform"
)

// TestPolicyLossPeerRollout: each two-sided rollout correction and the
// IS-corrected KL answers under the peer's name, gives another loss than
// the same request without it, and a bogus value of the knob is an error.
func TestPolicyLossPeerRollout(t *testing.T) {
	// ℓ = old − rollout = (ln 3, 0, 0.1); logp − old = (0.3, 0, −0.2).
	const batch = `"logp": [[-0.7, -2, -1.7]], "old_logp": [[-1, -2, -1.5]], "advantages": [[1, -1, 0.5]], "mask": [[1, 1, 1]],
		"rollout_logp": [[-2.0986122886681098, -2, -1.6]], "ref_logp": [[-1, -1.5, -2]]`
	loss := func(cfg string) (float64, error) {
		// The batch carries ref_logp for the KL cases; a request that
		// sends it needs a KL coefficient (an unread input is an error).
		if !strings.Contains(cfg, "kl_coef") {
			cfg = strings.TrimPrefix(cfg+`, "kl_coef": 0.001`, ", ")
		}
		out, err := conform.Run([]byte(`{"op": "policy_loss", ` + batch + `, "config": {` + cfg + `}}`))
		if err != nil {
			return 0, err
		}
		return out.(conform.PolicyLossResponse).Loss, nil
	}
	for _, c := range []struct{ name, plain, with, bogus string }{
		{"icepop", `"rollout_is": "token"`, `"rollout_is": "token", "rollout_is_mode": "mask"`, `"rollout_is": "token", "rollout_is_mode": "clip"`},
		{"seq-mask-tis", `"rollout_is": "token"`, `"rollout_is": "token", "rollout_is_mode": "seq_mask_tis", "rollout_is_threshold": 1.2`,
			`"rollout_is": "sequence", "rollout_is_mode": "seq_mask_tis"`},
		{"tis lower", `"rollout_is": "token"`, `"rollout_is": "token", "rollout_is_threshold_lower": 1.05`,
			`"rollout_is": "token", "rollout_is_threshold_lower": -1`},
		{"batch norm", `"rollout_is": "token"`, `"rollout_is": "token", "rollout_is_batch_normalize": true`,
			`"rollout_is": "token", "rollout_is_batch_normalize": "yes"`},
		{"verl rs k1", ``, `"rollout_rs": "token_k1", "rollout_rs_threshold": "0.5_2"`, `"rollout_rs": "token_k9", "rollout_rs_threshold": "0.5_2"`},
		{"verl rs chain", ``, `"rollout_rs": "token_k2,seq_max_k3", "rollout_rs_threshold": "1,0.5"`,
			`"rollout_rs": "token_k2,seq_max_k3", "rollout_rs_threshold": "1,0.5_2"`},
		{"skyrl outlier", ``, `"outlier_token_is_threshold_high": 2`, `"outlier_token_is_threshold_high": -1`},
		{"trl unbiased kl", `"kl_coef": 0.5`, `"kl_coef": 0.5, "use_bias_correction_kl": true`, `"kl_coef": 0.5, "use_bias_correction_kl": "maybe"`},
		{"trl vllm is", `"vllm_importance_sampling_mode": "token_truncate"`, `"vllm_importance_sampling_mode": "token_mask", "vllm_importance_sampling_clip_max": 2`,
			`"vllm_importance_sampling_mode": "token_clip"`},
		{"dppo tv", ``, `"loss_mode": "dppo_tv", "dppo_delta_high": 0.05`, `"loss_mode": "dppo_js"`},
		{"dppo kl", `"loss_mode": "dppo_kl"`, `"loss_mode": "dppo_kl", "dppo_delta_high": 0.01`, `"loss_mode": "dppo_kl", "dppo_delta_low": -1`},
		{"kl input clamp", `"kl_coef": 0.5`, `"kl_coef": 0.5, "kl_input_clamp": 0.2`,
			`"kl_coef": 0.5, "kl_input_clamp": -20`},
		{"trl vespo", `"loss_mode": "gpg"`, `"loss_mode": "vespo"`, `"loss_mode": "vespo", "vespo_k_pos": -2`},
		{"openrlhf icepop", `"is_correction_type": "tis", "is_correction_threshold": [0.5, 2]`,
			`"is_correction_type": "icepop", "is_correction_threshold": [0.5, 2]`, `"is_correction_type": "mis"`},
	} {
		plain, err := loss(c.plain)
		require.NoError(t, err, c.name)
		with, err := loss(c.with)
		require.NoError(t, err, c.name)
		assert.NotEqual(t, plain, with, "%s: the same loss as without it", c.name)
		_, err = loss(c.bogus)
		assert.Error(t, err, "%s: %s accepted", c.name, c.bogus)
	}
}

// TestPolicyLossPeerRolloutByHand: OpenRLHF's icepop at [½, 2] on ℓ =
// (ln 3, 0) gives the weights (0, 1), the first token kept in the
// token-mean denominator: −(0 + 1)/2.
func TestPolicyLossPeerRolloutByHand(t *testing.T) {
	const req = `{"op": "policy_loss", "logp": [[-1, -2]], "old_logp": [[-1, -2]], "advantages": [[1, 1]], "mask": [[1, 1]],
		"rollout_logp": [[-2.0986122886681098, -2]], "config": {"is_correction_type": "icepop", "is_correction_threshold": [0.5, 2]}}`
	out, err := conform.Run([]byte(req))
	require.NoError(t, err)
	assert.InDelta(t, -0.5, out.(conform.PolicyLossResponse).Loss, 1e-15)
}

// TestPolicyLossM2PO: AReaL's m2_threshold masks the token of largest
// (old − prox)², changing the loss, and a negative threshold is an error.
func TestPolicyLossM2PO(t *testing.T) {
	const batch = `"logp": [[-1, -0.5, -0.1]], "old_logp": [[0, 0, 0]], "prox_logp": [[-1, -0.5, -0.1]], "advantages": [[1, 1, 1]], "mask": [[1, 1, 1]]`
	loss := func(cfg string) (float64, error) {
		out, err := conform.Run([]byte(`{"op": "policy_loss", ` + batch + `, "config": {` + cfg + `}}`))
		if err != nil {
			return 0, err
		}
		return out.(conform.PolicyLossResponse).Loss, nil
	}
	plain, err := loss(``)
	require.NoError(t, err)
	with, err := loss(`"m2_threshold": 0.2`)
	require.NoError(t, err)
	assert.InDelta(t, -(math.Exp(-0.5)+math.Exp(-0.1))/2, with, 1e-15)
	assert.NotEqual(t, plain, with)
	_, err = loss(`"m2_threshold": -0.2`)
	assert.Error(t, err)
}

// TestPolicyLossPromptMean: SkyRL's prompt_mean and the zero-variance
// flag answer over JSON, differ from token-mean, and reject a bogus value.
func TestPolicyLossPromptMean(t *testing.T) {
	const batch = `"logp": [[-1, -1], [-1, -1], [-1, -1], [-1, -1]], "old_logp": [[-1, -1], [-1, -1], [-1, -1], [-1, -1]],
		"advantages": [[1, 0], [1, 1], [0, 0], [0, 0]], "mask": [[1, 0], [1, 1], [1, 1], [1, 1]]`
	loss := func(cfg string) (float64, error) {
		out, err := conform.Run([]byte(`{"op": "policy_loss", ` + batch + `, "config": {` + cfg + `}}`))
		if err != nil {
			return 0, err
		}
		return out.(conform.PolicyLossResponse).Loss, nil
	}
	plain, err := loss(`"group_size": 2`)
	require.NoError(t, err)
	assert.InDelta(t, -3.0/7, plain, 1e-15)
	pm, err := loss(`"agg": "prompt_mean", "group_size": 2`)
	require.NoError(t, err)
	assert.InDelta(t, -0.5, pm, 1e-15) // prompt 1 adds 0 but counts in P
	drop, err := loss(`"group_size": 2, "drop_zero_variance": true`)
	require.NoError(t, err)
	assert.InDelta(t, -1.0, drop, 1e-15)
	for _, bogus := range []string{`"agg": "prompt_sum", "group_size": 2`, `"agg": "prompt_mean"`, `"group_size": -2`, `"drop_zero_variance": 1`} {
		_, err := loss(bogus)
		assert.Error(t, err, bogus)
	}
}
