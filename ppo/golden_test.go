package ppo_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

type lossExpected struct {
	Loss        float64     `json:"loss"`
	Grad        [][]float64 `json:"grad"`
	EntropyGrad [][]float64 `json:"entropy_grad"`
}

func TestPolicyLossGolden(t *testing.T) {
	for _, c := range golden.Load(t, "policy_loss") {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			in, cfg, err := conform.DecodePolicyLoss(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			var want lossExpected
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			grad := tensor.MustNew[float64](in.Logp.B, in.Logp.T)
			if want.EntropyGrad != nil {
				in.EntropyGrad = tensor.MustNew[float64](in.Logp.B, in.Logp.T)
			}
			res, err := ppo.PolicyLoss(grad, in, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !golden.Close(res.Loss, want.Loss) {
				t.Errorf("float64 loss = %.10g, want %.10g", res.Loss, want.Loss)
			}
			golden.CheckRows(t, "float64 grad", tensor.Rows[float64](grad), want.Grad)
			if want.EntropyGrad != nil {
				golden.CheckRows(t, "float64 entropy grad", tensor.Rows[float64](in.EntropyGrad), want.EntropyGrad)
			}

			in32 := to32(in)
			grad32 := tensor.MustNew[float32](in.Logp.B, in.Logp.T)
			res32, err := ppo.PolicyLoss(grad32, in32, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !golden.Close(res32.Loss, want.Loss) {
				t.Errorf("float32 loss = %.10g, want %.10g", res32.Loss, want.Loss)
			}
			golden.CheckRows(t, "float32 grad", tensor.Rows[float64](grad32), want.Grad)
			if want.EntropyGrad != nil {
				golden.CheckRows(t, "float32 entropy grad", tensor.Rows[float64](in32.EntropyGrad), want.EntropyGrad)
			}
		})
	}
}

func TestValueLossGolden(t *testing.T) {
	for _, c := range golden.Load(t, "value_loss") {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			in, cfg, err := conform.DecodeValueLoss(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			var want lossExpected
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			grad := tensor.MustNew[float64](in.Values.B, in.Values.T)
			res, err := ppo.ValueLoss(grad, in, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !golden.Close(res.Loss, want.Loss) {
				t.Errorf("loss = %.10g, want %.10g", res.Loss, want.Loss)
			}
			golden.CheckRows(t, "grad", tensor.Rows[float64](grad), want.Grad)
		})
	}
}
