package appo_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/tensor"
)

type weightsExpected struct {
	Weights [][]float64 `json:"weights"`
	Frames  []int       `json:"frames"`
}

// split cuts flat per-token weights into one row per response.
func split[F tensor.Float](w []F, attn []tensor.Batch[F]) [][]float64 {
	rows := make([][]float64, len(attn))
	k := 0
	for i, a := range attn {
		rows[i] = make([]float64, a.B)
		for j := range rows[i] {
			rows[i][j] = float64(w[k])
			k++
		}
	}
	return rows
}

// to32 converts a decoded request to float32, the trainer's storage type.
func to32(t *testing.T, in appo.Inputs[float64]) appo.Inputs[float32] {
	t.Helper()
	out := appo.Inputs[float32]{Rewards: make([]float32, len(in.Rewards)), Attention: make([]tensor.Batch[float32], len(in.Attention))}
	for i, r := range in.Rewards {
		out.Rewards[i] = float32(r)
	}
	var rows []float32
	lengths := make([]int, len(in.Attention))
	for i, a := range in.Attention {
		out.Attention[i] = tensor.MustNew[float32](a.B, a.T)
		if err := tensor.Convert(out.Attention[i], a); err != nil {
			t.Fatal(err)
		}
		lengths[i] = a.B
		for j := range a.B {
			p, err := in.Dists.Dist(nil, i, j)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range p {
				rows = append(rows, float32(x))
			}
		}
	}
	v := in.Dists.Vocab()
	probs, err := tensor.FromSlice(rows, len(rows)/max(v, 1), v)
	if err != nil {
		t.Fatal(err)
	}
	if out.Dists, err = appo.NewDense(probs, lengths); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWeightsGolden(t *testing.T) {
	for _, c := range golden.Load(t, "appo_weights") {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			in, cfg, err := conform.DecodeAPPOWeights(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			var want weightsExpected
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			checkWeights(t, "float64", in, cfg, want)
			// float32 storage: the KL terms are still accumulated in
			// float64, and the inputs have six significant digits, so
			// the result must agree to the golden tolerance.
			checkWeights(t, "float32", to32(t, in), cfg, want)
		})
	}
}

// checkWeights runs one golden case and compares frames and weights.
func checkWeights[F tensor.Float](t *testing.T, label string, in appo.Inputs[F], cfg appo.Config, want weightsExpected) {
	t.Helper()
	n := 0
	for _, a := range in.Attention {
		n += a.B
	}
	w := make([]F, n)
	res, err := appo.Weights(w, in, cfg)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	if !slices.Equal(res.Frames, want.Frames) {
		t.Errorf("%s frames %v, want %v", label, res.Frames, want.Frames)
	}
	golden.CheckRows(t, label+" weights", split(w, in.Attention), want.Weights)
}
