package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rlpostBinary builds cmd/rlpost once per test binary.
func rlpostBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build cmd/rlpost")
	}
	bin := filepath.Join(t.TempDir(), "rlpost")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/rlpost/rlpost/cmd/rlpost").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// TestCLIRefusesSilentJSON: the silent cases of issue 28 over the JSON
// contract, through the built binary as another team's harness runs it:
// each exits 2 with an error naming the field's path, and no decoder
// internals leak.
func TestCLIRefusesSilentJSON(t *testing.T) {
	bin := rlpostBinary(t)
	const pl = `"op": "policy_loss", "old_logp": [[-1, -1]], "advantages": [[1, 1]]`
	for _, c := range []struct{ name, req, want string }{
		{"null reward", `{"op": "group_advantages", "rewards": [1, null, 0, 1], "group_size": 2}`, "group_advantages: rewards[1]: null is not a number"},
		{"null logp at a valid token", `{` + pl + `, "logp": [[-1, null]], "mask": [[1, 1]]}`, "policy_loss: logp[0][1]: null is not a number"},
		{"null mask", `{` + pl + `, "logp": [[-1, -1]], "mask": [[1, null]]}`, "policy_loss: mask[0][1]: null is not a number"},
		{"null config field", `{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "config": {"eps": null}}`, "group_advantages: config.eps: null is not a number"},
		{"NaN", `{"op": "group_advantages", "rewards": [1, NaN], "group_size": 2}`, "group_advantages: rewards[1]: NaN is not a JSON number"},
		{"NaN before op", `{"rewards": [NaN, 1], "group_size": 2, "op": "group_advantages"}`, "group_advantages: rewards[0]: NaN"},
		{"Infinity", `{"op": "gae", "rewards": [[0, Infinity]], "values": [[0, 0]], "mask": [[1, 1]]}`, "gae: rewards[0][1]: Infinity is not a JSON number"},
		{"string NaN", `{"op": "tas_weights", "mask": [[1]], "config": {"lambda": "NaN"}}`, `tas_weights: config.lambda: the string "NaN" is not a number`},
		{"wrong type", `{"op": "group_advantages", "rewards": [1, 0], "group_size": 2, "config": {"std": 1}}`, "group_advantages: config.std: the number 1 is not a string"},
		{"-Infinity at a valid token", `{` + pl + `, "logp": [[-1, "-Infinity"]], "mask": [[1, 1]]}`, "logp[0,1]: not finite"},
		{"ref_logp without kl_coef", `{` + pl + `, "logp": [[-1, -1]], "mask": [[1, 1]], "ref_logp": [[-1, -1]]}`, "ref_logp"},
		{"token_count under seq-mean", `{` + pl + `, "logp": [[-1, -1]], "mask": [[1, 1]], "config": {"agg": "seq-mean-token-mean", "token_count": 4}}`, "TokenCount"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, "conform")
			cmd.Stdin = strings.NewReader(c.req)
			var out bytes.Buffer
			cmd.Stdout = &out
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%s: exit %v, want 2; %s", c.req, err, out.String())
			assert.Equal(t, 2, ee.ExitCode())
			var resp map[string]string
			require.NoError(t, json.Unmarshal(out.Bytes(), &resp), out.String())
			assert.Contains(t, resp["error"], c.want)
			assert.NotContains(t, resp["error"], "Go struct field")
			assert.NotContains(t, resp["error"], "invalid character")
		})
	}
	// −Inf where the library reads nothing is the documented spelling.
	cmd := exec.Command(bin, "conform")
	cmd.Stdin = strings.NewReader(`{` + pl + `, "logp": [[-1, "-Infinity"]], "mask": [[1, 0]]}`)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), `"loss"`)
}

// TestLibraryRefusesSilentCases: the silent cases of issue 28 in the Go API.
func TestLibraryRefusesSilentCases(t *testing.T) {
	one := func(v ...float64) tensor.Batch[float64] {
		b, err := tensor.FromSlice(append([]float64(nil), v...), 1, len(v))
		require.NoError(t, err)
		return b
	}
	in := ppo.Inputs[float64]{Logp: one(-1, -0.5), OldLogp: one(-1.2, -0.4), Advantages: one(1, -1), Mask: one(1, 1), RefLogp: one(-0.7, -0.9)}
	grad := func() tensor.Batch[float64] { return tensor.MustNew[float64](1, 2) }

	t.Run("KLEstimator zero value is K3", func(t *testing.T) {
		lit := ppo.Config{ClipLow: .2, ClipHigh: .28, KLCoef: .04}
		assert.Equal(t, ppo.K3, lit.KLEstimator)
		k3 := lit
		k3.KLEstimator = ppo.K3
		got, err := ppo.PolicyLoss(grad(), in, lit)
		require.NoError(t, err)
		want, err := ppo.PolicyLoss(grad(), in, k3)
		require.NoError(t, err)
		assert.Equal(t, want.Loss, got.Loss)
		k1 := lit
		k1.KLEstimator = ppo.K1
		other, err := ppo.PolicyLoss(grad(), in, k1)
		require.NoError(t, err)
		assert.NotEqual(t, other.Loss, got.Loss, "k1 and k3 differ on this batch, so the check can fail")
	})
	t.Run("RefLogp with KLCoef 0", func(t *testing.T) {
		_, err := ppo.PolicyLoss(grad(), in, ppo.DefaultConfig())
		assert.ErrorIs(t, err, tensor.ErrRange)
		assert.ErrorContains(t, err, "ref_logp")
	})
	t.Run("missing RefLogp is ErrEmpty", func(t *testing.T) {
		noRef := in
		noRef.RefLogp = tensor.Batch[float64]{}
		cfg := ppo.DefaultConfig()
		cfg.KLCoef = 0.1
		_, err := ppo.PolicyLoss(grad(), noRef, cfg)
		assert.ErrorIs(t, err, tensor.ErrEmpty)
	})
	t.Run("TokenCount under SeqMeanTokenMean", func(t *testing.T) {
		noRef := in
		noRef.RefLogp = tensor.Batch[float64]{}
		cfg := ppo.DefaultConfig()
		cfg.Mode, cfg.TokenCount = ppo.SeqMeanTokenMean, 10
		_, err := ppo.PolicyLoss(grad(), noRef, cfg)
		assert.ErrorIs(t, err, tensor.ErrRange)
		assert.ErrorContains(t, err, "TokenCount")
		cfg.SeqCount = 1 // both counts given, as a mode-agnostic trainer does
		_, err = ppo.PolicyLoss(grad(), noRef, cfg)
		assert.NoError(t, err)
	})
	t.Run("packed mask beside padded inputs", func(t *testing.T) {
		noRef := in
		noRef.RefLogp = tensor.Batch[float64]{}
		var err error
		noRef.Mask, err = tensor.Packed([]float64{1, 1}, []int{0, 2})
		require.NoError(t, err)
		_, err = ppo.PolicyLoss(grad(), noRef, ppo.DefaultConfig())
		assert.ErrorIs(t, err, tensor.ErrShape)
		assert.NotContains(t, err.Error(), "takes only padded")
		assert.ErrorContains(t, err, "one layout")
	})
	t.Run("replay future version", func(t *testing.T) {
		buf, err := replay.New(replay.DefaultConfig())
		require.NoError(t, err)
		require.NoError(t, buf.SetVersion(3))
		_, err = buf.Add(replay.Experience{Logp: []float32{-1}, Reward: 1, Version: 4})
		assert.ErrorIs(t, err, tensor.ErrRange)
		_, errFresh := grpo.Fresh(3, 4, 8)
		assert.ErrorIs(t, errFresh, tensor.ErrRange, "grpo.Fresh refuses it too")
		_, err = buf.Add(replay.Experience{Logp: []float32{-1}, Reward: 1, Version: 3})
		assert.NoError(t, err)
	})
	t.Run("grpo.ByID prefix", func(t *testing.T) {
		_, err := grpo.ByID(nil)
		assert.True(t, strings.HasPrefix(err.Error(), "grpo: "), "%v", err)
	})
	t.Run("verifier past its deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		res, err := verifiers.Default.Verify(ctx, "math", `\boxed{4}`, "4", nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, res.Timeout)
		assert.Zero(t, res.Score)
	})
	t.Run("hedge shows no Parsed", func(t *testing.T) {
		res, err := verifiers.Default.Verify(context.Background(), "math", `\boxed{3} or maybe \boxed{4}`, "4", nil)
		require.NoError(t, err)
		assert.Zero(t, res.Score)
		assert.Contains(t, res.Reason, "several different")
		assert.NotEqual(t, "4", res.Parsed)
	})
}
