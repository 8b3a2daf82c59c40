package gae_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/conform"
	"github.com/rlpost/rlpost/internal/golden"
	"github.com/rlpost/rlpost/tensor"
)

// inputs holds the batches of one call in storage type F.
type inputs[F tensor.Float] struct{ r, v, m, e tensor.Batch[F] }

func convert[F tensor.Float](x tensor.Batch[float64]) tensor.Batch[F] {
	if x.IsZero() {
		return tensor.Batch[F]{}
	}
	y := tensor.MustNew[F](x.B, x.T)
	if err := tensor.Convert(y, x); err != nil {
		panic(err)
	}
	return y
}

func toInputs[F tensor.Float](in conform.GAEInputs) inputs[F] {
	return inputs[F]{convert[F](in.Rewards), convert[F](in.Values), convert[F](in.Mask), convert[F](in.TurnEnd)}
}

func (in inputs[F]) outputs() (adv, ret tensor.Batch[F]) {
	return tensor.MustNew[F](in.r.B, in.r.T), tensor.MustNew[F](in.r.B, in.r.T)
}

func (in inputs[F]) advantages(cfg gae.Config) (adv, ret tensor.Batch[F], err error) {
	adv, ret = in.outputs()
	err = gae.Advantages(adv.Data, ret.Data, in.r, in.v, in.m, cfg)
	return adv, ret, err
}

func (in inputs[F]) biLevel(cfg gae.BiLevelConfig) (adv, ret tensor.Batch[F], err error) {
	adv, ret = in.outputs()
	err = gae.BiLevel(adv.Data, ret.Data, in.r, in.v, in.m, in.e, cfg)
	return adv, ret, err
}

func (in inputs[F]) turnLevel(cfg gae.Config) (adv, ret tensor.Batch[F], err error) {
	adv, ret = in.outputs()
	err = gae.TurnLevel(adv.Data, ret.Data, in.r, in.v, in.m, in.e, cfg)
	return adv, ret, err
}

func rows[F tensor.Float](x tensor.Batch[F]) [][]float64 { return tensor.Rows[float64](x) }

// must builds a float64 batch from rows.
func must(rs ...[]float64) tensor.Batch[float64] {
	x, err := tensor.FromRows[float64](rs)
	if err != nil {
		panic(err)
	}
	return x
}

type gaeExpected struct {
	Advantages [][]float64 `json:"advantages"`
	Returns    [][]float64 `json:"returns"`
}

// estimate runs one estimator on decoded golden inputs in both storage
// types.
type estimate struct {
	run64 func() (adv, ret tensor.Batch[float64], err error)
	run32 func() (adv, ret tensor.Batch[float32], err error)
}

// checkGolden reproduces every case of golden file op, in float64 and in
// float32 storage.
func checkGolden(t *testing.T, op string, decode func(json.RawMessage) (estimate, error)) {
	for _, c := range golden.Load(t, op) {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			est, err := decode(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			var want gaeExpected
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			adv, ret, err := est.run64()
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckRows(t, "float64 advantages", rows(adv), want.Advantages)
			golden.CheckRows(t, "float64 returns", rows(ret), want.Returns)
			adv32, ret32, err := est.run32()
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckRows(t, "float32 advantages", rows(adv32), want.Advantages)
			golden.CheckRows(t, "float32 returns", rows(ret32), want.Returns)
		})
	}
}

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

// randomBatch draws a multi-turn batch: ragged rows with prompts, turns of
// random lengths separated by observations, and a row now and then with no
// valid token.
func randomBatch(rng *rand.Rand, B, T int) conform.GAEInputs {
	r, v, m, e := tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
	for b := range B {
		for t := range T {
			r.Set(b, t, rng.NormFloat64())
			v.Set(b, t, rng.NormFloat64())
		}
		if rng.IntN(8) == 0 {
			continue
		}
		t := rng.IntN(max(1, T/4)) // prompt
		for t < T {
			n := 1 + rng.IntN(12)
			for i := 0; i < n && t < T; i++ {
				m.Set(b, t, 1)
				t++
			}
			e.Set(b, t-1, 1)
			t += rng.IntN(6) // observation
		}
	}
	return conform.GAEInputs{Rewards: r, Values: v, Mask: m, TurnEnd: e}
}

func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		B, T := 1+rng.IntN(6), 1+rng.IntN(40)
		if trial%8 == 0 {
			B, T = 24, 1024 // large enough to split across the CPUs
		}
		in := randomBatch(rng, B, T)
		gamma, lam, whiten := rng.Float64(), rng.Float64(), trial%3 == 0
		if trial%4 == 0 {
			gamma, lam = 1, 1
		}
		bcfg := gae.BiLevelConfig{GammaToken: gamma, LambdaToken: lam, GammaTurn: rng.Float64(), LambdaTurn: rng.Float64(), Whiten: whiten}
		tcfg := gae.Config{Gamma: gamma, Lambda: lam, Whiten: whiten}
		for _, est := range []string{"token", "bilevel", "turn"} {
			wantA, wantR := make([][]float64, B), make([][]float64, B)
			for b := range B {
				r, v, m, e := in.Rewards.Row(b), in.Values.Row(b), in.Mask.Row(b), in.TurnEnd.Row(b)
				switch est {
				case "token":
					wantA[b], wantR[b] = refToken(r, v, m, gamma, lam)
				case "bilevel":
					wantA[b], wantR[b] = refBiLevel(r, v, m, e, bcfg.GammaToken, bcfg.LambdaToken, bcfg.GammaTurn, bcfg.LambdaTurn)
				case "turn":
					wantA[b], wantR[b] = refTurnLevel(r, v, m, e, gamma, lam)
				}
			}
			if whiten {
				refWhiten(wantA, tensor.Rows[float64](in.Mask))
			}
			check := func(name string, got, want [][]float64, tol float64) {
				t.Helper()
				for b := range want {
					for i := range want[b] {
						if math.Abs(got[b][i]-want[b][i]) > tol*(1+math.Abs(want[b][i])) {
							t.Fatalf("trial %d %s %s [%d,%d] = %v, want %v", trial, est, name, b, i, got[b][i], want[b][i])
						}
					}
				}
			}
			run64, run32 := toInputs[float64](in), toInputs[float32](in)
			var a64, r64 tensor.Batch[float64]
			var a32, r32 tensor.Batch[float32]
			var err64, err32 error
			switch est {
			case "token":
				a64, r64, err64 = run64.advantages(tcfg)
				a32, r32, err32 = run32.advantages(tcfg)
			case "bilevel":
				a64, r64, err64 = run64.biLevel(bcfg)
				a32, r32, err32 = run32.biLevel(bcfg)
			case "turn":
				a64, r64, err64 = run64.turnLevel(tcfg)
				a32, r32, err32 = run32.turnLevel(tcfg)
			}
			if err64 != nil || err32 != nil {
				t.Fatalf("trial %d %s: %v / %v", trial, est, err64, err32)
			}
			check("float64 advantages", rows(a64), wantA, 1e-10)
			check("float64 returns", rows(r64), wantR, 1e-10)
			check("float32 advantages", rows(a32), wantA, 1e-4)
			check("float32 returns", rows(r32), wantR, 1e-4)
		}
	}
}

// TestDeterministic checks that a batch split across the CPUs gives the
// same bits as each row computed alone on the calling goroutine.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := randomBatch(rng, 32, 1024)
	x := toInputs[float32](in)
	cfg := gae.BiLevelConfig{GammaToken: 0.99, LambdaToken: 0.95, GammaTurn: 0.9, LambdaTurn: 0.9}
	adv, ret, err := x.biLevel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for b := range in.Rewards.B {
		row := func(y tensor.Batch[float32]) tensor.Batch[float32] {
			z, err := tensor.FromSlice(append([]float32(nil), y.Row(b)...), 1, y.T)
			if err != nil {
				t.Fatal(err)
			}
			return z
		}
		one := inputs[float32]{row(x.r), row(x.v), row(x.m), row(x.e)}
		a, r, err := one.biLevel(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a.Data {
			if a.Data[i] != adv.At(b, i) || r.Data[i] != ret.At(b, i) {
				t.Fatalf("row %d position %d: batch (%v, %v), alone (%v, %v)", b, i, adv.At(b, i), ret.At(b, i), a.Data[i], r.Data[i])
			}
		}
	}
}

func TestWhiten(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := randomBatch(rng, 16, 1500)
	x := toInputs[float64](in)
	plain, plainRet, err := x.advantages(gae.Config{Gamma: 0.99, Lambda: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	white, whiteRet, err := x.advantages(gae.Config{Gamma: 0.99, Lambda: 0.95, Whiten: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var sum, ss float64
	for i, m := range in.Mask.Data {
		if whiteRet.Data[i] != plainRet.Data[i] {
			t.Fatalf("returns changed by whitening at %d: %v, %v", i, whiteRet.Data[i], plainRet.Data[i])
		}
		if m == 0 {
			if white.Data[i] != 0 {
				t.Fatalf("masked position %d whitened to %v", i, white.Data[i])
			}
			continue
		}
		n++
		sum += white.Data[i]
	}
	mean := sum / float64(n)
	for i, m := range in.Mask.Data {
		if m == 1 {
			ss += (white.Data[i] - mean) * (white.Data[i] - mean)
		}
	}
	if math.Abs(mean) > 1e-12 || math.Abs(ss/float64(n-1)-1) > 1e-6 {
		t.Errorf("whitened advantages: mean %v, unbiased variance %v; want 0 and 1", mean, ss/float64(n-1))
	}
	// Whitening is affine with a positive slope: order is kept.
	i0, i1 := -1, -1
	for i, m := range in.Mask.Data {
		if m == 1 && i0 < 0 {
			i0 = i
		} else if m == 1 && plain.Data[i] != plain.Data[i0] {
			i1 = i
			break
		}
	}
	if (plain.Data[i0] < plain.Data[i1]) != (white.Data[i0] < white.Data[i1]) {
		t.Errorf("whitening reversed the order of positions %d and %d", i0, i1)
	}

	// One valid token: no spread, whitens to 0.
	one := conform.GAEInputs{Rewards: must([]float64{0, 3}), Values: must([]float64{0, 1}), Mask: must([]float64{0, 1})}
	a, r, err := toInputs[float64](one).advantages(gae.Config{Gamma: 1, Lambda: 1, Whiten: true})
	if err != nil || a.Data[1] != 0 || r.Data[1] != 3 {
		t.Errorf("single token: advantages %v, returns %v, %v; want [0 0], [0 3]", a.Data, r.Data, err)
	}
}

func TestTurnLevelMatchesBiLevelAtTurnEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := randomBatch(rng, 8, 60)
	x := toInputs[float64](in)
	bi, _, err := x.biLevel(gae.BiLevelConfig{GammaToken: 0.3, LambdaToken: 0.2, GammaTurn: 0.9, LambdaTurn: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	tl, tr, err := x.turnLevel(gae.Config{Gamma: 0.9, Lambda: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	for b := range in.Mask.B {
		for _, turn := range turns(in.Mask.Row(b), in.TurnEnd.Row(b)) {
			end := turn[len(turn)-1]
			if tl.At(b, end) != bi.At(b, end) {
				t.Fatalf("row %d turn end %d: turn level %v, Bi-Level %v", b, end, tl.At(b, end), bi.At(b, end))
			}
			for _, i := range turn {
				if tl.At(b, i) != tl.At(b, end) || tr.At(b, i) != tl.At(b, end)+in.Values.At(b, end) {
					t.Fatalf("row %d token %d: (%v, %v), want the turn's (%v, %v)", b, i, tl.At(b, i), tr.At(b, i), tl.At(b, end), tl.At(b, end)+in.Values.At(b, end))
				}
			}
		}
	}
}

func TestDefaults(t *testing.T) {
	if c := gae.DefaultConfig(); c != (gae.Config{Gamma: 1, Lambda: 1}) {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	if c := gae.DefaultBiLevelConfig(); c != (gae.BiLevelConfig{GammaToken: 1, LambdaToken: 1, GammaTurn: 0.95, LambdaTurn: 1}) {
		t.Errorf("DefaultBiLevelConfig() = %+v", c)
	}
	if c := gae.DefaultTurnConfig(); c != (gae.Config{Gamma: 0.95, Lambda: 1}) {
		t.Errorf("DefaultTurnConfig() = %+v", c)
	}
	for _, err := range []error{gae.DefaultConfig().Validate(), gae.DefaultBiLevelConfig().Validate(), gae.DefaultTurnConfig().Validate()} {
		if err != nil {
			t.Error(err)
		}
	}
}

// errCase is a call expected to fail with an error of kind naming arg (and
// position, in the message).
type errCase struct {
	name string
	call func() error
	kind error
	want string // a substring of the message: argument and position
}

func checkErrors(t *testing.T, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if err == nil {
				t.Fatalf("no error, want %v naming %q", c.kind, c.want)
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("error %q is not %v", err, c.kind)
			}
			var ae *tensor.ArgError
			if !errors.As(err, &ae) {
				t.Errorf("error %q is not a *tensor.ArgError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	base := func() inputs[float32] { return toInputs[float32](specRow) }
	with := func(edit func(x *inputs[float32])) inputs[float32] {
		x := base()
		edit(&x)
		return x
	}
	bi := gae.DefaultBiLevelConfig()
	tok := gae.DefaultConfig()
	biErr := func(x inputs[float32], cfg gae.BiLevelConfig) func() error {
		return func() error { _, _, err := x.biLevel(cfg); return err }
	}
	tokErr := func(x inputs[float32], cfg gae.Config) func() error {
		return func() error { _, _, err := x.advantages(cfg); return err }
	}
	turnErr := func(x inputs[float32], cfg gae.Config) func() error {
		return func() error { _, _, err := x.turnLevel(cfg); return err }
	}
	noEnd := with(func(x *inputs[float32]) { x.e.Set(0, 7, 0) })
	maskedEnd := with(func(x *inputs[float32]) { x.e.Set(0, 5, 1) })
	trailing := with(func(x *inputs[float32]) { x.e.Set(0, 7, 0); x.e.Set(0, 6, 1) })
	cases := []errCase{
		{"no turn end in the last turn", biErr(noEnd, bi), tensor.ErrRange, "turn_end[0,7]"},
		{"token after the last turn end", biErr(trailing, bi), tensor.ErrRange, "turn_end[0,7]"},
		{"turn level: no turn end", turnErr(noEnd, gae.DefaultTurnConfig()), tensor.ErrRange, "turn_end[0,7]"},
		{"turn end on a masked token", biErr(maskedEnd, bi), tensor.ErrRange, "turn_end[0,5]"},
		{"turn level: turn end on a masked token", turnErr(maskedEnd, gae.DefaultTurnConfig()), tensor.ErrRange, "turn_end[0,5]"},
		{"turn end not 0 or 1", biErr(with(func(x *inputs[float32]) { x.e.Set(0, 2, 0.5) }), bi), tensor.ErrMask, "turn_end[0,2]"},
		{"mask not 0 or 1", tokErr(with(func(x *inputs[float32]) { x.m.Set(0, 4, 2) }), tok), tensor.ErrMask, "mask[0,4]"},
		{"mask NaN", biErr(with(func(x *inputs[float32]) { x.m.Set(0, 0, float32(math.NaN())) }), bi), tensor.ErrMask, "mask[0,0]"},
		{"reward NaN", tokErr(with(func(x *inputs[float32]) { x.r.Set(0, 2, float32(math.NaN())) }), tok), tensor.ErrNonFinite, "rewards[0,2]"},
		{"value Inf", biErr(with(func(x *inputs[float32]) { x.v.Set(0, 6, float32(math.Inf(-1))) }), bi), tensor.ErrNonFinite, "values[0,6]"},
		{"turn level: reward NaN at a turn end", turnErr(with(func(x *inputs[float32]) { x.r.Set(0, 3, float32(math.NaN())) }), gae.DefaultTurnConfig()), tensor.ErrNonFinite, "rewards[0,3]"},
		{"overflow", tokErr(with(func(x *inputs[float32]) {
			for i := range x.r.Data {
				x.r.Data[i] = 3e38
			}
		}), tok), tensor.ErrRange, "adv[0,"},
		{"gamma > 1", tokErr(base(), gae.Config{Gamma: 1.01, Lambda: 1}), tensor.ErrRange, "Config.Gamma"},
		{"lambda < 0", tokErr(base(), gae.Config{Gamma: 1, Lambda: -0.1}), tensor.ErrRange, "Config.Lambda"},
		{"gamma NaN", turnErr(base(), gae.Config{Gamma: math.NaN(), Lambda: 1}), tensor.ErrRange, "Config.Gamma"},
		{"gamma_turn > 1", biErr(base(), gae.BiLevelConfig{GammaToken: 1, LambdaToken: 1, GammaTurn: 2, LambdaTurn: 1}), tensor.ErrRange, "BiLevelConfig.GammaTurn"},
		{"lambda_turn < 0", biErr(base(), gae.BiLevelConfig{GammaToken: 1, LambdaToken: 1, GammaTurn: 1, LambdaTurn: -1}), tensor.ErrRange, "BiLevelConfig.LambdaTurn"},
		{"gamma_token NaN", biErr(base(), gae.BiLevelConfig{GammaToken: math.NaN(), LambdaToken: 1, GammaTurn: 1, LambdaTurn: 1}), tensor.ErrRange, "BiLevelConfig.GammaToken"},
		{"lambda_token Inf", biErr(base(), gae.BiLevelConfig{GammaToken: 1, LambdaToken: math.Inf(1), GammaTurn: 1, LambdaTurn: 1}), tensor.ErrRange, "BiLevelConfig.LambdaToken"},
		{"values shape", tokErr(with(func(x *inputs[float32]) { x.v = tensor.MustNew[float32](1, 7) }), tok), tensor.ErrShape, "values"},
		{"mask shape", biErr(with(func(x *inputs[float32]) { x.m = tensor.MustNew[float32](2, 8) }), bi), tensor.ErrShape, "mask"},
		{"turn_end shape", biErr(with(func(x *inputs[float32]) { x.e = tensor.Batch[float32]{} }), bi), tensor.ErrShape, "turn_end"},
		{"rewards data length", tokErr(with(func(x *inputs[float32]) { x.r.Data = x.r.Data[:5] }), tok), tensor.ErrShape, "rewards"},
		{"adv length", func() error {
			x := base()
			return gae.Advantages(make([]float32, 7), make([]float32, 8), x.r, x.v, x.m, tok)
		}, tensor.ErrShape, "adv"},
		{"ret length", func() error {
			x := base()
			return gae.BiLevel(make([]float32, 8), nil, x.r, x.v, x.m, x.e, bi)
		}, tensor.ErrShape, "ret"},
	}
	checkErrors(t, cases)

	// Masked positions are never read: garbage there is fine.
	x := with(func(x *inputs[float32]) {
		x.r.Set(0, 0, float32(math.NaN()))
		x.v.Set(0, 4, float32(math.Inf(1)))
	})
	if _, _, err := x.biLevel(bi); err != nil {
		t.Errorf("garbage on masked tokens: %v", err)
	}
	// Turn-level GAE reads rewards and values at turn ends only.
	x = with(func(x *inputs[float32]) { x.r.Set(0, 1, float32(math.NaN())) })
	if _, _, err := x.turnLevel(gae.DefaultTurnConfig()); err != nil {
		t.Errorf("turn level with NaN reward inside a turn: %v", err)
	}
}

func TestNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	in := toInputs[float32](randomBatch(rng, 64, 512))
	adv, ret := in.outputs()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Advantages", func() error {
			return gae.Advantages(adv.Data, ret.Data, in.r, in.v, in.m, gae.Config{Gamma: 1, Lambda: 0.95, Whiten: true})
		}},
		{"BiLevel", func() error {
			return gae.BiLevel(adv.Data, ret.Data, in.r, in.v, in.m, in.e, gae.DefaultBiLevelConfig())
		}},
		{"TurnLevel", func() error {
			return gae.TurnLevel(adv.Data, ret.Data, in.r, in.v, in.m, in.e, gae.DefaultTurnConfig())
		}},
	} {
		if err := c.call(); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _ = c.call() }); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, n)
		}
	}
}

// score is a named storage type, which the job recycling treats apart.
type score float32

func TestNamedFloatType(t *testing.T) {
	want, wantRet, err := toInputs[float32](specRow).biLevel(gae.DefaultBiLevelConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the second call reuses a job
		got, gotRet, err := toInputs[score](specRow).biLevel(gae.DefaultBiLevelConfig())
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Data {
			if float32(got.Data[i]) != want.Data[i] || float32(gotRet.Data[i]) != wantRet.Data[i] {
				t.Fatalf("position %d: (%v, %v) with a named type, (%v, %v) with float32", i, got.Data[i], gotRet.Data[i], want.Data[i], wantRet.Data[i])
			}
		}
	}
}

// TestConcurrentCalls runs the estimators from several goroutines at once,
// as independent trainers in one process would: each call must give the
// result it gives alone.
func TestConcurrentCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	in := toInputs[float32](randomBatch(rng, 32, 1024))
	cfg := gae.BiLevelConfig{GammaToken: 0.99, LambdaToken: 0.95, GammaTurn: 0.9, LambdaTurn: 0.95, Whiten: true}
	want, _, err := in.biLevel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 10 {
				got, _, err := in.biLevel(cfg)
				if err == nil {
					for i := range got.Data {
						if got.Data[i] != want.Data[i] {
							err = fmt.Errorf("position %d: %v, want %v", i, got.Data[i], want.Data[i])
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
