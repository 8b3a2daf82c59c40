package conform_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/stretchr/testify/require"
)

func runJSON(t *testing.T, req string, out any) {
	t.Helper()
	resp, err := conform.Run([]byte(req))
	require.NoError(t, err)
	b, err := json.Marshal(resp)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, out))
}

// TestGAEPresets: verl's compute_gae_advantage_return (γ = λ = 1) and TRL's
// PPOTrainer (γ = 1, λ = 0.95) whiten the advantages, values worked by hand.
func TestGAEPresets(t *testing.T) {
	var got struct{ Advantages, Returns [][]float64 }
	// verl: returns 1, 1 | 0, 0; masked_whiten's mean m = 2/(4 + 10⁻⁸)
	// (about 0.5), its variance (2(1 − m)² + 2m²)/(4 + 10⁻⁸)·4/3 (about
	// 1/3); verl prints 0.8660253940416531 and −0.8660253897115262.
	runJSON(t, `{"op": "gae", "rewards": [[0, 1], [0, 0]], "values": [[0, 0], [0, 0]], "mask": [[1, 1], [1, 1]],
		"config": {"preset": "verl"}}`, &got)
	eps := 1e-8
	m := 2 / (4 + eps)
	sd := math.Sqrt((2*(1-m)*(1-m)+2*m*m)/(4+eps)*4/3 + 1e-8)
	require.InDeltaSlice(t, []float64{(1 - m) / sd, (1 - m) / sd}, got.Advantages[0], 1e-15)
	require.InDeltaSlice(t, []float64{-m / sd, -m / sd}, got.Advantages[1], 1e-15)
	require.InDelta(t, 0.8660253940416531, got.Advantages[0][0], 1e-15)
	require.InDelta(t, -0.8660253897115262, got.Advantages[1][0], 1e-15)
	require.Equal(t, []float64{1, 1}, got.Returns[0])
	// TRL: δ_1 = 1 − 0.25 = 0.75, A_0 = (0.25 − 0.5) + 0.95·0.75 = 0.4625;
	// whitened: ±0.14375/sqrt(2·0.14375² + 1e-8).
	runJSON(t, `{"op": "gae", "rewards": [[0, 1]], "values": [[0.5, 0.25]], "mask": [[1, 1]],
		"config": {"preset": "trl"}}`, &got)
	w := 0.14375 / math.Sqrt(2*0.14375*0.14375+1e-8)
	require.InDeltaSlice(t, []float64{-w, w}, got.Advantages[0], 1e-12)
	require.InDeltaSlice(t, []float64{0.9625, 1}, got.Returns[0], 1e-12)
	// A field beside the preset overrides it.
	runJSON(t, `{"op": "gae", "rewards": [[0, 1], [0, 0]], "values": [[0, 0], [0, 0]], "mask": [[1, 1], [1, 1]],
		"config": {"preset": "verl", "whiten": false}}`, &got)
	require.Equal(t, []float64{1, 1}, got.Advantages[0])
	_, err := conform.Run([]byte(`{"op": "gae", "rewards": [[0]], "values": [[0]], "mask": [[1]], "config": {"preset": "openrlhf"}}`))
	require.ErrorContains(t, err, "config.preset")
}

// TestGroupPresets: one group with rewards 1, 0, 0, 0 (mean 0.25, torch.std
// 0.5) and a lone response with reward 1: verl's
// compute_grpo_outcome_advantage gives 0.75/(0.5 + 1e-6) and 1/(1 + 1e-6);
// TRL's GRPOTrainer 0.75/(0.5 + 1e-4), and needs two generations.
func TestGroupPresets(t *testing.T) {
	var got struct{ Advantages []float64 }
	runJSON(t, `{"op": "group_advantages", "rewards": [1, 0, 0, 0, 1], "group_ids": [0, 0, 0, 0, 1],
		"config": {"preset": "verl"}}`, &got)
	require.InDelta(t, 1.499997000006, got.Advantages[0], 1e-12)
	require.InDelta(t, 0.999999000001, got.Advantages[4], 1e-15)
	runJSON(t, `{"op": "group_advantages", "rewards": [1, 0, 0, 0], "group_size": 4, "config": {"preset": "trl"}}`, &got)
	require.InDelta(t, 1.4997000599880024, got.Advantages[0], 1e-12)
	// norm_adv_by_std_in_grpo = false beside the preset.
	runJSON(t, `{"op": "group_advantages", "rewards": [1, 0, 0, 0], "group_size": 4, "config": {"preset": "verl", "scale": "none"}}`, &got)
	require.Equal(t, 0.75, got.Advantages[0])
	for _, bad := range []string{
		`{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "config": {"preset": "openrlhf"}}`,
		`{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "config": {"estimator": "vapo"}}`,
		`{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "config": {"singleton": "one"}}`,
		`{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "config": {"estimator": "remax"}}`,
		`{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "lengths": [1, 2]}`,
	} {
		_, err := conform.Run([]byte(bad))
		require.Error(t, err, bad)
	}
}

// TestPolicyLossVerlModes: under "preset": "verl" a loss_mode is verl's
// function of that name (ppo.VerlMode). Row 0: Δ = (0.3, −0.1), A = (1, 3);
// row 1 one token with Δ = 0, A = 1. verl's gspo is GSPO-token with
// its policy term seq-mean-token-mean: −e^{0.1} − ½ (token-mean would give
// (−4e^{0.1} − 1)/3); verl's geo_mean averages over every row, the empty one included.
func TestPolicyLossVerlModes(t *testing.T) {
	var got struct {
		Loss float64
		Grad [][]float64
	}
	const batch = `"logp": [[0.3, -0.1], [0, 0]], "old_logp": [[0, 0], [0, 0]], "advantages": [[1, 3], [1, 0]]`
	runJSON(t, `{"op": "policy_loss", "preset": "verl", `+batch+`, "mask": [[1, 1], [1, 0]],
		"config": {"loss_mode": "gspo"}}`, &got)
	s := math.Exp(0.1)
	require.InDelta(t, -s-0.5, got.Loss, 1e-15)
	require.InDeltaSlice(t, []float64{-s / 4, -3 * s / 4}, got.Grad[0], 1e-15)
	// verl clamps GSPO's log-ratio from above only: Δ = −25 gives
	// −0.8·e^{−25} (inside the clip, as s < 0.8 and A > 0), not −0.8·e^{−10}.
	runJSON(t, `{"op": "policy_loss", "preset": "verl", "logp": [[-25]], "old_logp": [[0]], "advantages": [[0.8]],
		"mask": [[1]], "config": {"loss_mode": "gspo"}}`, &got)
	require.InDelta(t, -0.8*math.Exp(-25), got.Loss, 1e-25)
	// verl's gspo keeps seq-mean-token-mean for the policy term whatever
	// loss_agg_mode says, while its KL term follows loss_agg_mode: with k1
	// against ref_logp = 0 and token-mean, the KL term is (0.3 − 0.1 + 0)/3
	// and gives every token 1/3.
	runJSON(t, `{"op": "policy_loss", "preset": "verl", `+batch+`, "mask": [[1, 1], [1, 0]],
		"ref_logp": [[0, 0], [0, 0]], "config": {"loss_mode": "gspo", "agg": "token-mean", "kl_coef": 1, "kl_estimator": "k1"}}`, &got)
	require.InDelta(t, -s-0.5+0.2/3, got.Loss, 1e-15)
	require.InDeltaSlice(t, []float64{-s/4 + 1.0/3, -3*s/4 + 1.0/3}, got.Grad[0], 1e-15)
	require.InDelta(t, -0.5+1.0/3, got.Grad[1][0], 1e-15)
	// A field beside the preset overrides it.
	runJSON(t, `{"op": "policy_loss", "preset": "verl", `+batch+`, "mask": [[1, 1], [1, 0]],
		"config": {"loss_mode": "gspo", "agg": "token-mean", "policy_seq_mean_token_mean": false}}`, &got)
	require.InDelta(t, (-4*s-1)/3, got.Loss, 1e-15)

	runJSON(t, `{"op": "policy_loss", "preset": "verl", `+batch+`, "mask": [[1, 1], [0, 0]],
		"config": {"loss_mode": "geo_mean"}}`, &got)
	R := math.Exp(0.05)
	require.InDelta(t, -R, got.Loss, 1e-15)
	require.InDeltaSlice(t, []float64{0, -R / 2}, got.Grad[0], 1e-15)
}
