package gae_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/tensor"
)

func TestAdvantagesGolden(t *testing.T) {
	checkGolden(t, "gae", func(raw json.RawMessage) (estimate, error) {
		in, cfg, err := conform.DecodeGAE(raw)
		return estimate{
			func() (tensor.Batch[float64], tensor.Batch[float64], error) {
				return toInputs[float64](in).advantages(cfg)
			},
			func() (tensor.Batch[float32], tensor.Batch[float32], error) {
				return toInputs[float32](in).advantages(cfg)
			},
		}, err
	})
}

func TestBiLevelGolden(t *testing.T) {
	checkGolden(t, "bilevel_gae", func(raw json.RawMessage) (estimate, error) {
		in, cfg, err := conform.DecodeBiLevelGAE(raw)
		return estimate{
			func() (tensor.Batch[float64], tensor.Batch[float64], error) {
				return toInputs[float64](in).biLevel(cfg)
			},
			func() (tensor.Batch[float32], tensor.Batch[float32], error) {
				return toInputs[float32](in).biLevel(cfg)
			},
		}, err
	})
}

// specRow is the golden row of docs/spec.md#gae: two turns, a prompt token before the
// first and two observation tokens between them.
var specRow = conform.GAEInputs{
	Rewards: must([]float64{0, -0.01, 0, 0.5, 0, 0, 0, 1}),
	Values:  must([]float64{.1, .2, .3, .4, 0, 0, .6, .7}),
	Mask:    must([]float64{0, 1, 1, 1, 0, 0, 1, 1}),
	TurnEnd: must([]float64{0, 0, 0, 1, 0, 0, 0, 1}),
}

func TestBiLevelSpecRow(t *testing.T) {
	cfg := gae.DefaultBiLevelConfig() // γ = λ = 1, γ_turn = 0.95
	// By hand: the last turn's advantage is 1 + 0 − 0.7 = 0.3; the first
	// turn's 0.5 + 0.95·0.7 − 0.4 + 0.95·0.3 = 1.05. Inside the turns,
	// A_6 = 0 + 0.7 − 0.6 + 0.3 = 0.4, A_2 = 0.4 − 0.3 + 1.05 = 1.15 and
	// A_1 = −0.01 + 0.3 − 0.2 + 1.15 = 1.24.
	wantAdv := []float64{0, 1.24, 1.15, 1.05, 0, 0, 0.4, 0.3}
	wantRet := []float64{0, 1.44, 1.45, 1.45, 0, 0, 1.0, 1.0}
	adv, ret, err := toInputs[float64](specRow).biLevel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckVec(t, "float64 advantages", adv.Data, wantAdv)
	golden.CheckVec(t, "float64 returns", ret.Data, wantRet)
	adv32, ret32, err := toInputs[float32](specRow).biLevel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckVec(t, "float32 advantages", rows(adv32)[0], wantAdv)
	golden.CheckVec(t, "float32 returns", rows(ret32)[0], wantRet)

	// Plain token GAE on the same row lets the first turn's 0.5 and the
	// second turn's values flow through without the turn-level discount.
	tokAdv, _, err := toInputs[float64](specRow).advantages(gae.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckVec(t, "token GAE", tokAdv.Data, []float64{0, 1.29, 1.2, 1.1, 0, 0, 0.4, 0.3})
}

func TestBiLevelSingleTurnIsTokenGAE(t *testing.T) {
	in := conform.GAEInputs{
		Rewards: must([]float64{9, -0.02, 0.01, 0.03, 1.5}, []float64{0.2, 0.4, 0, 0, 0}),
		Values:  must([]float64{5, 0.3, -0.2, 0.6, 0.1}, []float64{0.7, -0.1, 0, 0, 3}),
		Mask:    must([]float64{0, 1, 1, 1, 1}, []float64{1, 1, 0, 0, 0}),
		TurnEnd: must([]float64{0, 0, 0, 0, 1}, []float64{0, 1, 0, 0, 0}),
	}
	for _, c := range []struct{ gamma, lam float64 }{{1, 1}, {0.99, 0.95}, {0.5, 0}, {0, 1}} {
		tok, tokRet, err := toInputs[float64](in).advantages(gae.Config{Gamma: c.gamma, Lambda: c.lam})
		if err != nil {
			t.Fatal(err)
		}
		for _, gTurn := range []float64{0, 0.3, 0.95, 1} {
			for _, lTurn := range []float64{0, 0.7, 1} {
				name := fmt.Sprintf("γ=%v λ=%v γ_turn=%v λ_turn=%v", c.gamma, c.lam, gTurn, lTurn)
				cfg := gae.BiLevelConfig{GammaToken: c.gamma, LambdaToken: c.lam, GammaTurn: gTurn, LambdaTurn: lTurn}
				adv, ret, err := toInputs[float64](in).biLevel(cfg)
				if err != nil {
					t.Fatal(err)
				}
				for i := range adv.Data {
					if math.Abs(adv.Data[i]-tok.Data[i]) > 1e-12 || math.Abs(ret.Data[i]-tokRet.Data[i]) > 1e-12 {
						t.Fatalf("%s: position %d: Bi-Level (%v, %v), token GAE (%v, %v)",
							name, i, adv.Data[i], ret.Data[i], tok.Data[i], tokRet.Data[i])
					}
				}
			}
		}
	}
}

func TestRowWithoutValidTokens(t *testing.T) {
	in := conform.GAEInputs{
		Rewards: must([]float64{1, 2, 3}, []float64{0.5, 0, 1}),
		Values:  must([]float64{4, 5, 6}, []float64{0.1, 0.2, 0.3}),
		Mask:    must([]float64{0, 0, 0}, []float64{1, 1, 1}),
		TurnEnd: must([]float64{0, 0, 0}, []float64{0, 0, 1}),
	}
	type result struct {
		name     string
		adv, ret tensor.Batch[float64]
		err      error
	}
	x := toInputs[float64](in)
	for _, whiten := range []bool{false, true} {
		var results []result
		a, r, err := x.advantages(gae.Config{Gamma: 0.9, Lambda: 0.8, Whiten: whiten})
		results = append(results, result{"Advantages", a, r, err})
		a, r, err = x.biLevel(gae.BiLevelConfig{GammaToken: 0.9, LambdaToken: 0.8, GammaTurn: 0.5, LambdaTurn: 1, Whiten: whiten})
		results = append(results, result{"BiLevel", a, r, err})
		a, r, err = x.turnLevel(gae.Config{Gamma: 0.9, Lambda: 0.8, Whiten: whiten})
		results = append(results, result{"TurnLevel", a, r, err})
		for _, c := range results {
			if c.err != nil {
				t.Fatalf("%s whiten=%v: %v", c.name, whiten, c.err)
			}
			for i, v := range c.adv.Row(0) {
				if v != 0 || c.ret.At(0, i) != 0 {
					t.Errorf("%s whiten=%v: row 0 (no valid tokens) position %d = (%v, %v), want 0", c.name, whiten, i, v, c.ret.At(0, i))
				}
			}
			if whiten {
				// Only row 1 counts: its three advantages whiten to mean 0.
				if s := c.adv.At(1, 0) + c.adv.At(1, 1) + c.adv.At(1, 2); math.Abs(s) > 1e-9 {
					t.Errorf("%s: whitened row 1 sums to %v, want 0", c.name, s)
				}
			}
		}
	}
	// A batch with no valid token at all is fine and leaves zeros.
	empty := conform.GAEInputs{Rewards: must([]float64{1}), Values: must([]float64{1}), Mask: must([]float64{0}), TurnEnd: must([]float64{0})}
	if a, _, err := toInputs[float64](empty).advantages(gae.Config{Gamma: 1, Lambda: 1, Whiten: true}); err != nil || a.Data[0] != 0 {
		t.Errorf("all-masked batch: %v, %v", a.Data, err)
	}
}

func TestTurnWithOneToken(t *testing.T) {
	// Turn 0 is the single token at position 1; turn 1 is positions 3..4.
	in := conform.GAEInputs{
		Rewards: must([]float64{0, 0.5, 0, -0.1, 1}),
		Values:  must([]float64{0, 0.2, 0, 0.3, 0.4}),
		Mask:    must([]float64{0, 1, 0, 1, 1}),
		TurnEnd: must([]float64{0, 1, 0, 0, 1}),
	}
	cfg := gae.BiLevelConfig{GammaToken: 0.9, LambdaToken: 0.5, GammaTurn: 0.8, LambdaTurn: 0.5}
	// Turn level: A_1 = 1 − 0.4 = 0.6 at position 4; at position 1,
	// 0.5 + 0.8·0.4 − 0.2 + 0.8·0.5·0.6 = 0.86. Token level in turn 1:
	// A_3 = −0.1 + 0.9·0.4 − 0.3 + 0.9·0.5·0.6 = 0.23.
	wantAdv := []float64{0, 0.86, 0, 0.23, 0.6}
	wantRet := []float64{0, 1.06, 0, 0.53, 1.0}
	adv, ret, err := toInputs[float64](in).biLevel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckVec(t, "advantages", adv.Data, wantAdv)
	golden.CheckVec(t, "returns", ret.Data, wantRet)

	// Turn level broadcasts: turn 1's tokens both get 0.6 and return
	// 0.6 + 0.4.
	tadv, tret, err := toInputs[float64](in).turnLevel(gae.Config{Gamma: 0.8, Lambda: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckVec(t, "turn-level advantages", tadv.Data, []float64{0, 0.86, 0, 0.6, 0.6})
	golden.CheckVec(t, "turn-level returns", tret.Data, []float64{0, 1.06, 0, 1.0, 1.0})
}

// TestObservationsAddNoDecay checks the masked semantics: inserting
// observation tokens (mask 0, arbitrary contents) between the turns of a
// trajectory changes nothing on the generated tokens.
func TestObservationsAddNoDecay(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 1 + rng.IntN(20)
		r, v, e := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			r[i], v[i] = rng.NormFloat64(), rng.NormFloat64()
			if rng.IntN(4) == 0 {
				e[i] = 1
			}
		}
		e[n-1] = 1
		// Spread the tokens out with observations holding garbage.
		var R, V, M, E []float64
		for i := range n {
			for range rng.IntN(3) {
				R, V, M, E = append(R, math.NaN()), append(V, math.Inf(1)), append(M, 0), append(E, 0)
			}
			R, V, M, E = append(R, r[i]), append(V, v[i]), append(M, 1), append(E, e[i])
		}
		ones := make([]float64, n)
		for i := range ones {
			ones[i] = 1
		}
		dense := conform.GAEInputs{Rewards: must(r), Values: must(v), Mask: must(ones), TurnEnd: must(e)}
		sparse := conform.GAEInputs{Rewards: must(R), Values: must(V), Mask: must(M), TurnEnd: must(E)}
		gamma, lam := rng.Float64(), rng.Float64()
		bcfg := gae.BiLevelConfig{GammaToken: gamma, LambdaToken: lam, GammaTurn: rng.Float64(), LambdaTurn: rng.Float64()}
		for _, est := range []string{"token", "bilevel", "turn"} {
			run := func(in conform.GAEInputs) (tensor.Batch[float64], tensor.Batch[float64], error) {
				x := toInputs[float64](in)
				switch est {
				case "token":
					return x.advantages(gae.Config{Gamma: gamma, Lambda: lam})
				case "bilevel":
					return x.biLevel(bcfg)
				}
				return x.turnLevel(gae.Config{Gamma: gamma, Lambda: lam})
			}
			da, dr, err := run(dense)
			if err != nil {
				t.Fatal(err)
			}
			sa, sr, err := run(sparse)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for i, m := range M {
				if m == 0 {
					if sa.Data[i] != 0 || sr.Data[i] != 0 {
						t.Fatalf("trial %d %s: observation %d got (%v, %v), want 0", trial, est, i, sa.Data[i], sr.Data[i])
					}
					continue
				}
				if sa.Data[i] != da.Data[k] || sr.Data[i] != dr.Data[k] {
					t.Fatalf("trial %d %s: token %d: (%v, %v) with observations, (%v, %v) without",
						trial, est, k, sa.Data[i], sr.Data[i], da.Data[k], dr.Data[k])
				}
				k++
			}
		}
	}
}
