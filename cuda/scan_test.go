package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// This file checks, on the CPU and in every build, the decomposition the
// GAE kernels use (kernels/gae.cu): a row's backward recursion as a
// composition of affine maps on the state (A, V), composed per chunk,
// scanned across the chunks of a tile from the right, replayed per chunk,
// and carried from tile to tile. The code below follows the kernels step
// by step with the block's threads as loop iterations, for any number of
// threads and tokens per thread, and is compared with package gae.

// affine is map2: s ↦ (al·A + be·V + b1, ze·V + b2).
type affine struct{ al, be, ze, b1, b2 float64 }

var identity = affine{al: 1, ze: 1}

// compose returns l∘r, r applied first.
func compose(l, r affine) affine {
	return affine{
		al: l.al * r.al,
		be: l.al*r.be + l.be*r.ze,
		ze: l.ze * r.ze,
		b1: l.al*r.b1 + l.be*r.b2 + l.b1,
		b2: l.ze*r.b2 + l.b2,
	}
}

func step(g, gl, r, v float64) affine { return affine{al: gl, be: g, b1: r - v, b2: v} }

func (m affine) apply(a, v float64) (float64, float64) {
	return m.al*a + m.be*v + m.b1, m.ze*v + m.b2
}

// scanMaps is the block's Hillis–Steele scan from the right: afterwards
// m[i] = m_i ∘ … ∘ m_{n−1}. Each round reads the previous round's values,
// as the kernel's barriers ensure.
func scanMaps(m []affine) {
	prev := make([]affine, len(m))
	for d := 1; d < len(m); d <<= 1 {
		copy(prev, m)
		for i := range m {
			if i+d < len(m) {
				m[i] = compose(prev[i], prev[i+d])
			}
		}
	}
}

// incomingState is the state to the right of chunk i: the later chunks of
// the tile applied to the carry.
func incomingState(scanned []affine, i int, a, v float64) (float64, float64) {
	if i+1 < len(scanned) {
		return scanned[i+1].apply(a, v)
	}
	return a, v
}

// scanTokenRow is gae_token for one row with threads threads of per tokens
// each.
func scanTokenRow[F tensor.Float](adv, ret, r, v, m []F, g, gl float64, threads, per int) {
	T := len(m)
	tile := threads * per
	maps := make([]affine, threads)
	carryA, carryV := 0.0, 0.0
	for t0 := (T - 1) / tile * tile; t0 >= 0; t0 -= tile {
		valid := func(t int) bool { return t < T && m[t] == 1 }
		for th := range threads {
			mp := identity
			for k := per - 1; k >= 0; k-- {
				if t := t0 + th*per + k; valid(t) {
					mp = compose(step(g, gl, float64(r[t]), float64(v[t])), mp)
				}
			}
			maps[th] = mp
		}
		scanMaps(maps)
		var edgeA, edgeV float64
		for th := range threads {
			na, nv := incomingState(maps, th, carryA, carryV)
			for k := per - 1; k >= 0; k-- {
				t := t0 + th*per + k
				if t >= T {
					continue
				}
				if !valid(t) {
					adv[t], ret[t] = 0, 0
					continue
				}
				vt := float64(v[t])
				a := float64(r[t]) + g*nv - vt + gl*na
				adv[t], ret[t] = F(a), F(a+vt)
				nv, na = vt, a
			}
			if th == 0 {
				edgeA, edgeV = na, nv
			}
		}
		carryA, carryV = edgeA, edgeV
	}
}

// scanBiLevelRow is gae_bilevel for one row: per tile the turn-level scan
// over turn ends, then the token-level scan in which a turn end is the
// constant map s ↦ (A_turn, v). g holds γ_tok, γ_tok·λ_tok, γ_turn,
// γ_turn·λ_turn.
func scanBiLevelRow[F tensor.Float](adv, ret, r, v, m, e []F, g [4]float64, threads, per int) {
	T := len(m)
	tile := threads * per
	maps := make([]affine, threads)
	turnA := make([]float64, tile)
	var turnCarryA, turnCarryV, tokCarryA, tokCarryV float64
	for t0 := (T - 1) / tile * tile; t0 >= 0; t0 -= tile {
		valid := func(t int) bool { return t < T && m[t] == 1 }
		end := func(t int) bool { return valid(t) && e[t] == 1 }
		// Pass 1a: the turn-level maps.
		for th := range threads {
			mp := identity
			for k := per - 1; k >= 0; k-- {
				if t := t0 + th*per + k; end(t) {
					mp = compose(step(g[2], g[3], float64(r[t]), float64(v[t])), mp)
				}
			}
			maps[th] = mp
		}
		scanMaps(maps)
		// Pass 1b: the turn advantages and the token-level maps.
		token := make([]affine, threads)
		var edgeA, edgeV float64
		for th := range threads {
			nau, nvu := incomingState(maps, th, turnCarryA, turnCarryV)
			mp := identity
			for k := per - 1; k >= 0; k-- {
				t := t0 + th*per + k
				if !valid(t) {
					continue
				}
				vt := float64(v[t])
				if end(t) {
					a := float64(r[t]) + g[2]*nvu - vt + g[3]*nau
					nvu, nau = vt, a
					turnA[th*per+k] = a
					mp = affine{b1: a, b2: vt}
				} else {
					mp = compose(step(g[0], g[1], float64(r[t]), vt), mp)
				}
			}
			token[th] = mp
			if th == 0 {
				edgeA, edgeV = nau, nvu
			}
		}
		turnCarryA, turnCarryV = edgeA, edgeV
		scanMaps(token)
		// Pass 2: the token recursion.
		for th := range threads {
			na, nv := incomingState(token, th, tokCarryA, tokCarryV)
			for k := per - 1; k >= 0; k-- {
				t := t0 + th*per + k
				if t >= T {
					continue
				}
				if !valid(t) {
					adv[t], ret[t] = 0, 0
					continue
				}
				vt := float64(v[t])
				var a float64
				if end(t) {
					a = turnA[th*per+k]
				} else {
					a = float64(r[t]) + g[0]*nv - vt + g[1]*na
				}
				adv[t], ret[t] = F(a), F(a+vt)
				nv, na = vt, a
			}
			if th == 0 {
				edgeA, edgeV = na, nv
			}
		}
		tokCarryA, tokCarryV = edgeA, edgeV
	}
}

// scanRow draws one row: a non-prefix mask, rewards and values, turn ends
// at random valid tokens and at the last one.
func scanRow(rng *rand.Rand, T int) (r, v, m, e []float64) {
	r, v, m, e = make([]float64, T), make([]float64, T), make([]float64, T), make([]float64, T)
	last := -1
	for t := range T {
		r[t], v[t] = rng.NormFloat64(), rng.NormFloat64()
		if rng.IntN(4) != 0 {
			m[t], last = 1, t
			if rng.IntN(9) == 0 {
				e[t] = 1
			}
		}
	}
	if last >= 0 {
		e[last] = 1
	}
	return
}

// scanClose compares the decomposition with the sequential recursion; in
// float64 only rounding separates them.
func scanClose(t *testing.T, what string, got, want []float64) {
	t.Helper()
	scale := 1.0
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*scale {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, got[i], want[i])
		}
	}
}

func TestScanDecomposition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	layouts := [][2]int{{1, 1}, {2, 1}, {3, 2}, {4, 3}, {7, 5}, {32, 8}, {256, 8}}
	for _, T := range []int{1, 2, 5, 64, 100, 2047, 2049, 5000} {
		for _, g := range [][4]float64{{1, 1, 1, 1}, {1, 0.95, 0.95, 0.95}, {0.99, 0.9405, 0.9, 0.81}, {0.5, 0, 1, 0}, {0, 0, 0, 0}} {
			r, v, m, e := scanRow(rng, T)
			x := func(d []float64) tensor.Batch[float64] {
				return tensor.Batch[float64]{Shape: tensor.Shape{B: 1, T: T}, Data: d}
			}
			wantA, wantR := make([]float64, T), make([]float64, T)
			// γ·λ is g[1] for the token level, so λ = g[1]/g[0] (λ = 1 when
			// γ = 0, where it has no effect and γ = λ = 0 is the rejected zero
			// Config).
			lam := func(gamma, gl float64) float64 {
				if gamma == 0 {
					return 1
				}
				return gl / gamma
			}
			cfg := gae.Config{Gamma: g[0], Lambda: lam(g[0], g[1])}
			if err := gae.Advantages(x(wantA), x(wantR), x(r), x(v), x(m), cfg); err != nil {
				t.Fatal(err)
			}
			bcfg := gae.BiLevelConfig{GammaToken: g[0], LambdaToken: lam(g[0], g[1]), GammaTurn: g[2], LambdaTurn: lam(g[2], g[3])}
			wantBA, wantBR := make([]float64, T), make([]float64, T)
			if err := gae.BiLevel(x(wantBA), x(wantBR), x(r), x(v), x(m), x(e), bcfg); err != nil {
				t.Fatal(err)
			}
			gs := [4]float64{cfg.Gamma, cfg.Gamma * cfg.Lambda, bcfg.GammaTurn, bcfg.GammaTurn * bcfg.LambdaTurn}
			for _, l := range layouts {
				t.Run(fmt.Sprintf("T%d-g%v-%dx%d", T, g, l[0], l[1]), func(t *testing.T) {
					adv, ret := make([]float64, T), make([]float64, T)
					scanTokenRow(adv, ret, r, v, m, gs[0], gs[1], l[0], l[1])
					scanClose(t, "token adv", adv, wantA)
					scanClose(t, "token ret", ret, wantR)
					scanBiLevelRow(adv, ret, r, v, m, e, gs, l[0], l[1])
					scanClose(t, "bilevel adv", adv, wantBA)
					scanClose(t, "bilevel ret", ret, wantBR)
				})
			}
		}
	}
}

// TestScanFloat32 runs the decomposition on float32 storage, as the
// kernels do, against gae on the same storage.
func TestScanFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const T = 6000
	r64, v64, m64, _ := scanRow(rng, T)
	f32 := func(d []float64) []float32 {
		o := make([]float32, len(d))
		for i, x := range d {
			o[i] = float32(x)
		}
		return o
	}
	r, v, m := f32(r64), f32(v64), f32(m64)
	x := func(d []float32) tensor.Batch[float32] {
		return tensor.Batch[float32]{Shape: tensor.Shape{B: 1, T: T}, Data: d}
	}
	wantA, wantR := make([]float32, T), make([]float32, T)
	if err := gae.Advantages(x(wantA), x(wantR), x(r), x(v), x(m), gae.Config{Gamma: 0.99, Lambda: 0.95}); err != nil {
		t.Fatal(err)
	}
	adv, ret := make([]float32, T), make([]float32, T)
	scanTokenRow(adv, ret, r, v, m, 0.99, 0.99*0.95, 256, 8)
	for i := range wantA {
		for _, p := range [][2]float32{{adv[i], wantA[i]}, {ret[i], wantR[i]}} {
			if math.Abs(float64(p[0]-p[1])) > 1e-6*math.Max(1, math.Abs(float64(p[1]))) {
				t.Fatalf("[%d] = %v, want %v", i, p[0], p[1])
			}
		}
	}
}
