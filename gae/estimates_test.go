package gae_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/tensor"
)

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
