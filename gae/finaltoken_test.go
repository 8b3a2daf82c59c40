package gae_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// The golden row of the Bi-Level tests (γ_token = λ = 1, γ_turn = 0.95)
// under Algorithm 2 line 18, worked by hand:
//
//	turn 1 (e = 7): A_1 = 1 − 0.7 = 0.3; the final token adds 0 − 0.7 → −0.4;
//	                token 6: 0 + 0.7 − 0.6 − 0.4 = −0.3
//	turn 0 (e = 3): A_0 = 0.5 + 0.95·0.7 − 0.4 + 0.95·0.3 = 1.05 (the turn
//	                level reads A_1 = 0.3, not the final token's −0.4);
//	                the final token adds V[6] − V[3] = 0.2 → 1.25;
//	                token 2: 0 + 0.4 − 0.3 + 1.25 = 1.35; token 1: −0.01 + 0.3 − 0.2 + 1.35 = 1.44
func TestBiLevelFinalTokenDelta(t *testing.T) {
	mask := must([]float64{0, 1, 1, 1, 0, 0, 1, 1})
	ends := must([]float64{0, 0, 0, 1, 0, 0, 0, 1})
	rewards := must([]float64{0, -0.01, 0, 0.5, 0, 0, 0, 1})
	values := must([]float64{.1, .2, .3, .4, 0, 0, .6, .7})
	cfg := gae.DefaultBiLevelConfig()
	for _, c := range []struct {
		rule    gae.FinalTokenRule
		adv, rt []float64
	}{
		{gae.TurnAdvantage, []float64{0, 1.24, 1.15, 1.05, 0, 0, 0.4, 0.3}, []float64{0, 1.44, 1.45, 1.45, 0, 0, 1, 1}},
		{gae.TurnAdvantagePlusDelta, []float64{0, 1.44, 1.35, 1.25, 0, 0, -0.3, -0.4}, []float64{0, 1.64, 1.65, 1.65, 0, 0, 0.3, 0.3}},
	} {
		cfg.FinalToken = c.rule
		advB, retB := tensor.MustNew[float64](1, 8), tensor.MustNew[float64](1, 8)
		adv, ret := advB.Data, retB.Data
		if err := gae.BiLevel(advB, retB, rewards, values, mask, ends, cfg); err != nil {
			t.Fatal(err)
		}
		for i := range adv {
			if math.Abs(adv[i]-c.adv[i]) > 1e-12 || math.Abs(ret[i]-c.rt[i]) > 1e-12 {
				t.Fatalf("rule %d: A = %v, returns %v; want %v and %v", c.rule, adv, ret, c.adv, c.rt)
			}
		}
	}
}

func TestBiLevelFinalTokenRuleValidated(t *testing.T) {
	cfg := gae.DefaultBiLevelConfig()
	if cfg.FinalToken != gae.TurnAdvantage {
		t.Fatalf("default FinalToken = %d, want TurnAdvantage (the released code's rule)", cfg.FinalToken)
	}
	cfg.FinalToken = 7
	err := cfg.Validate()
	if !errors.Is(err, tensor.ErrRange) {
		t.Fatalf("Validate with FinalToken 7 = %v, want ErrRange", err)
	}
}

// refBiLevelDelta is Algorithm 2 with line 18 as printed, stage by stage:
// turn advantages first, then each turn's inner recursion seeded at its last
// token with δ + A_turn, δ = γ_token·V(next valid token, 0 at the end) −
// V[last].
func refBiLevelDelta(r, v, m, e []float64, gTok, lTok, gTurn, lTurn float64) []float64 {
	adv := make([]float64, len(m))
	turnA := turnAdvantages(r, v, e, gTurn, lTurn)
	ts := turns(m, e)
	for k, turn := range ts {
		last := turn[len(turn)-1]
		next := 0.0
		if k+1 < len(ts) {
			next = v[ts[k+1][0]]
		}
		adv[last] = turnA[last] + gTok*next - v[last]
		for i := len(turn) - 2; i >= 0; i-- {
			t, n := turn[i], turn[i+1]
			adv[t] = r[t] + gTok*v[n] - v[t] + gTok*lTok*adv[n]
		}
	}
	return adv
}

func TestBiLevelFinalTokenDeltaRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	for iter := range 500 {
		T := 1 + rng.IntN(24)
		m, e, r, v := make([]float64, T), make([]float64, T), make([]float64, T), make([]float64, T)
		for i := range T {
			if rng.IntN(4) > 0 {
				m[i] = 1
			}
			r[i], v[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		// Turn ends: the last valid token of every run, plus random cuts.
		for i := range T {
			if m[i] == 1 && (i+1 == T || m[i+1] == 0 || rng.IntN(5) == 0) {
				e[i] = 1
			}
		}
		cfg := gae.BiLevelConfig{GammaToken: rng.Float64(), LambdaToken: rng.Float64(), GammaTurn: rng.Float64(), LambdaTurn: rng.Float64(),
			FinalToken: gae.TurnAdvantagePlusDelta}
		advB, retB := tensor.MustNew[float64](1, T), tensor.MustNew[float64](1, T)
		adv := advB.Data
		if err := gae.BiLevel(advB, retB, must(r), must(v), must(m), must(e), cfg); err != nil {
			t.Fatal(err)
		}
		want := refBiLevelDelta(r, v, m, e, cfg.GammaToken, cfg.LambdaToken, cfg.GammaTurn, cfg.LambdaTurn)
		for i := range want {
			if math.Abs(adv[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
				t.Fatalf("iteration %d: A = %v, reference %v (m %v, e %v)", iter, adv, want, m, e)
			}
		}
	}
}
