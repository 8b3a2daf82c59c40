package gae_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

// fuzzBytes turns fuzzer bytes into shapes, values and configurations,
// biased towards the cases that matter: masks and turn ends that are mostly
// 0 and 1, values that are sometimes NaN, infinite or huge.
type fuzzBytes []byte

func (d *fuzzBytes) byte() byte {
	if len(*d) == 0 {
		return 0
	}
	b := (*d)[0]
	*d = (*d)[1:]
	return b
}

var specials = [...]float64{math.NaN(), math.Inf(1), math.Inf(-1), 3e38, -3e38, 1e308, -1e308, math.Copysign(0, -1), 0.5, 2}

func (d *fuzzBytes) value() float64 {
	b := d.byte()
	if b >= 246 {
		return specials[b-246]
	}
	return float64(int(b)-123) / 16
}

// flag returns 0 or 1, and now and then something else.
func (d *fuzzBytes) flag() float64 {
	b := d.byte()
	switch {
	case b < 120:
		return 0
	case b < 250:
		return 1
	}
	return flagSpecials[b-250]
}

var flagSpecials = [...]float64{math.Copysign(0, -1), 0.5, 2, math.NaN(), -1, 1e308}

func (d *fuzzBytes) unit() float64 {
	b := d.byte()
	switch {
	case b <= 200:
		return float64(b) / 200
	case b < 250:
		return 1
	}
	return specials[b-250] // NaN, ±Inf, ±3e38, 1e308: out of [0, 1]
}

// fuzzCase is one call's inputs drawn from fuzzer bytes.
type fuzzCase struct {
	in      inputs[float64]
	advLen  int
	retLen  int
	gamma   [2]float64 // token (or only) level
	turn    [2]float64 // turn level
	whiten  bool
	corrupt int // which shape was corrupted on purpose, 0 for none
}

// badSize reports whether est must fail on the case's shapes.
func (c fuzzCase) badSize(est string) bool {
	n := c.in.r.Size()
	switch c.corrupt {
	case 1, 3:
		return true
	case 2:
		return est != "token"
	case 4, 5:
		return n != 0
	}
	return false
}

func decodeFuzz(data []byte) fuzzCase {
	d := fuzzBytes(data)
	B, T := int(d.byte()%5), int(d.byte()%12)
	var c fuzzCase
	c.gamma = [2]float64{d.unit(), d.unit()}
	c.turn = [2]float64{d.unit(), d.unit()}
	c.whiten = d.byte()%2 == 1
	c.in = inputs[float64]{tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)}
	for i := range B * T {
		c.in.r.Data[i], c.in.v.Data[i] = d.value(), d.value()
		c.in.m.Data[i], c.in.e.Data[i] = d.flag(), d.flag()
	}
	c.advLen, c.retLen = B*T, B*T
	c.corrupt = int(d.byte() % 16)
	switch c.corrupt {
	case 1:
		c.in.v = tensor.MustNew[float64](B, T+1)
	case 2:
		c.in.e = tensor.MustNew[float64](B+1, T)
	case 3:
		c.advLen++
	case 4:
		c.retLen = 0
	case 5:
		c.in.m.Data = c.in.m.Data[:len(c.in.m.Data)/2]
	default:
		c.corrupt = 0
	}
	return c
}

// run calls estimator est ("token", "bilevel" or "turn") on the case in
// storage type F and returns the outputs as float64 rows.
func runFuzz[F tensor.Float](c fuzzCase, est string) (adv, ret []float64, err error) {
	// Element by element, so that corrupted lengths carry over.
	conv := func(x tensor.Batch[float64]) tensor.Batch[F] {
		y := tensor.Batch[F]{Shape: x.Shape, Data: make([]F, len(x.Data))}
		for i, v := range x.Data {
			y.Data[i] = F(v)
		}
		return y
	}
	in := inputs[F]{conv(c.in.r), conv(c.in.v), conv(c.in.m), conv(c.in.e)}
	a, r := make([]F, c.advLen), make([]F, c.retLen)
	ab, rb := tensor.Batch[F]{Shape: in.r.Shape, Data: a}, tensor.Batch[F]{Shape: in.r.Shape, Data: r}
	switch est {
	case "token":
		err = gae.Advantages(ab, rb, in.r, in.v, in.m, gae.Config{Gamma: c.gamma[0], Lambda: c.gamma[1], Whiten: c.whiten})
	case "bilevel":
		err = gae.BiLevel(ab, rb, in.r, in.v, in.m, in.e, gae.BiLevelConfig{
			GammaToken: c.gamma[0], LambdaToken: c.gamma[1], GammaTurn: c.turn[0], LambdaTurn: c.turn[1], Whiten: c.whiten})
	case "turn":
		err = gae.TurnLevel(ab, rb, in.r, in.v, in.m, in.e, gae.Config{Gamma: c.turn[0], Lambda: c.turn[1], Whiten: c.whiten})
	}
	adv, ret = make([]float64, len(a)), make([]float64, len(r))
	for i := range a {
		adv[i] = float64(a[i])
	}
	for i := range r {
		ret[i] = float64(r[i])
	}
	return adv, ret, err
}

// configOK reports whether the γ and λ that est reads are in [0, 1] and
// the configuration is not the rejected zero value.
func (c fuzzCase) configOK(est string) bool {
	var gs []float64
	switch est {
	case "token":
		gs = c.gamma[:]
	case "bilevel":
		gs = append(c.gamma[:], c.turn[:]...)
	case "turn":
		gs = c.turn[:]
	}
	zero := !c.whiten
	for _, g := range gs {
		if !(g >= 0 && g <= 1) {
			return false
		}
		zero = zero && g == 0
	}
	return !zero
}

// expect computes what est should return on a case with a valid
// configuration and shapes, from the reference: ok is false if the call
// must fail (a bad mask or turn end, a NaN or infinity the estimator reads,
// or results that overflow F).
func expect[F tensor.Float](c fuzzCase, est string) (adv, ret []float64, ok bool) {
	in := c.in
	turns := est != "token"
	gamma := c.gamma
	if est == "turn" {
		gamma = c.turn
	}
	B, T := in.r.B, in.r.T
	var advRows [][]float64
	for b := range B {
		r, v, m, e := in.r.Row(b), in.v.Row(b), in.m.Row(b), in.e.Row(b)
		m, e = append([]float64(nil), m...), append([]float64(nil), e...)
		last := -1
		for t := range T {
			if m[t] != 0 && m[t] != 1 {
				return nil, nil, false
			}
			m[t] += 0 // −0 reads as 0
			if turns {
				if e[t] != 0 && e[t] != 1 || e[t] == 1 && m[t] == 0 {
					return nil, nil, false
				}
				e[t] += 0
			}
			if m[t] == 1 {
				last = t
				read := est != "turn" || e[t] == 1
				if read && (math.IsNaN(r[t]) || math.IsInf(r[t], 0) || math.IsNaN(v[t]) || math.IsInf(v[t], 0)) {
					return nil, nil, false
				}
			}
		}
		if turns && last >= 0 && e[last] != 1 {
			return nil, nil, false
		}
		// The reference sees the inputs as F holds them.
		rf, vf := make([]float64, T), make([]float64, T)
		for t := range T {
			rf[t], vf[t] = float64(F(r[t])), float64(F(v[t]))
		}
		var a, rt []float64
		switch est {
		case "token":
			a, rt = refToken(rf, vf, m, gamma[0], gamma[1])
		case "bilevel":
			a, rt = refBiLevel(rf, vf, m, e, gamma[0], gamma[1], c.turn[0], c.turn[1])
		case "turn":
			a, rt = refTurnLevel(rf, vf, m, e, gamma[0], gamma[1])
		}
		for t := range T {
			if !tensor.IsFinite(F(a[t])) || !tensor.IsFinite(F(rt[t])) {
				return nil, nil, false
			}
			a[t] = float64(F(a[t]))
			ret = append(ret, float64(F(rt[t])))
		}
		advRows = append(advRows, a)
	}
	if c.whiten {
		var n int
		var sum float64
		for b, row := range advRows {
			for t, x := range row {
				if in.m.At(b, t) == 1 {
					n++
					sum += x
				}
			}
		}
		mean := 0.0
		if n > 0 {
			mean = sum / float64(n)
		}
		ss := 0.0
		for b, row := range advRows {
			for t, x := range row {
				if in.m.At(b, t) == 1 {
					ss += (x - mean) * (x - mean)
				}
			}
		}
		if math.IsInf(ss, 0) || math.IsInf(sum, 0) {
			return nil, nil, false
		}
		refWhiten(advRows, tensor.Rows[float64](in.m))
	}
	for _, row := range advRows {
		adv = append(adv, row...)
	}
	return adv, ret, true
}

func checkFuzz[F tensor.Float](t *testing.T, c fuzzCase, est string) {
	adv, ret, err := runFuzz[F](c, est)
	var z F
	if !c.configOK(est) {
		if !errors.Is(err, tensor.ErrRange) || !strings.Contains(err.Error(), "Config") {
			t.Fatalf("%s %T: γ or λ out of range gave error %v", est, z, err)
		}
		return
	}
	if c.badSize(est) {
		if !errors.Is(err, tensor.ErrShape) {
			t.Fatalf("%s %T: corrupted shape gave error %v, want %v", est, z, err, tensor.ErrShape)
		}
		return
	}
	wantAdv, wantRet, ok := expect[F](c, est)
	if err != nil {
		var ae *tensor.ArgError
		if !errors.As(err, &ae) {
			t.Fatalf("%s %T: error %q is not an *tensor.ArgError", est, z, err)
		}
		if ok {
			t.Fatalf("%s %T: unexpected error %v", est, z, err)
		}
		return
	}
	if !ok {
		t.Fatalf("%s %T: no error on input the reference rejects", est, z)
	}
	tol := 0.0
	if c.whiten {
		tol = 1e-9
		if _, is32 := any(z).(float32); is32 {
			tol = 1e-3
		}
	}
	for i := range wantAdv {
		if math.Abs(adv[i]-wantAdv[i]) > tol*(1+math.Abs(wantAdv[i])) || ret[i] != wantRet[i] {
			t.Fatalf("%s %T: position %d = (%v, %v), reference (%v, %v)", est, z, i, adv[i], ret[i], wantAdv[i], wantRet[i])
		}
		if c.in.m.Data[i] == 0 && (adv[i] != 0 || ret[i] != 0) {
			t.Fatalf("%s %T: masked position %d = (%v, %v), want 0", est, z, i, adv[i], ret[i])
		}
	}
}

func addSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 8, 200, 200, 190, 200, 0, 123, 125, 0, 0, 131, 126, 200, 0, 123, 128, 200, 0, 131, 129, 200, 200, 0})
	f.Add([]byte{2, 3, 200, 190, 180, 170, 1, 250, 1, 200, 200, 246, 3, 200, 0, 0})
	f.Add([]byte{3, 4, 255, 100, 100, 100, 0, 249, 249, 200, 200, 249, 249, 200, 200, 0, 0, 0, 0, 3})
}

// fuzzEstimator fuzzes estimator est in both storage types.
func fuzzEstimator(f *testing.F, est string) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := decodeFuzz(data)
		checkFuzz[float64](t, c, est)
		checkFuzz[float32](t, c, est)
	})
}

func FuzzAdvantages(f *testing.F) { fuzzEstimator(f, "token") }
func FuzzBiLevel(f *testing.F)    { fuzzEstimator(f, "bilevel") }
func FuzzTurnLevel(f *testing.F)  { fuzzEstimator(f, "turn") }

// FuzzHelpers runs TurnEnds, PlaceTurnRewards and AddKLPenalty on arbitrary
// masks and values: they must not panic, and on success must produce what
// their definitions say.
func FuzzHelpers(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := decodeFuzz(data)
		m, e, r := c.in.m, c.in.e, c.in.r
		ends := tensor.MustNew[float64](m.B, m.T)
		if err := gae.TurnEnds(ends, m); err == nil {
			for b := range m.B {
				for i := range m.T {
					want := m.At(b, i) == 1 && (i+1 == m.T || m.At(b, i+1) == 0)
					if (ends.At(b, i) == 1) != want || ends.At(b, i) != 0 && ends.At(b, i) != 1 {
						t.Fatalf("TurnEnds[%d,%d] = %v for mask row %v", b, i, ends.At(b, i), m.Row(b))
					}
				}
			}
		} else if !errors.Is(err, tensor.ErrMask) && !errors.Is(err, tensor.ErrShape) {
			t.Fatalf("TurnEnds: %v", err)
		}

		// Turn rewards: a [B, K] batch of the values, K the most turn ends
		// of a row (one column too few when the last byte says so).
		K := 0
		if e.Check("turn_end") == nil {
			for b := range e.B {
				n := 0
				for _, x := range e.Row(b) {
					if x == 1 {
						n++
					}
				}
				K = max(K, n)
			}
		}
		if len(data) > 0 && data[len(data)-1] == 7 && K > 0 {
			K--
		}
		turnRewards := tensor.MustNew[float64](max(e.B, 0), K)
		for i := range turnRewards.Data {
			turnRewards.Data[i] = r.Data[i%max(1, len(r.Data))]
		}
		dst := tensor.MustNew[float64](max(e.B, 0), max(e.T, 0))
		if err := gae.PlaceTurnRewards(dst, e, turnRewards); err == nil {
			for b := range e.B {
				k := 0
				for i, x := range e.Row(b) {
					want := 0.0
					if x == 1 {
						want = turnRewards.At(b, k)
						k++
					}
					if dst.At(b, i) != want {
						t.Fatalf("PlaceTurnRewards[%d,%d] = %v, want %v", b, i, dst.At(b, i), want)
					}
				}
			}
		} else {
			var ae *tensor.ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("PlaceTurnRewards: %v", err)
			}
		}

		rewards := tensor.MustNew[float64](r.B, r.T)
		copy(rewards.Data, r.Data)
		beta := c.gamma[0]
		if err := gae.AddKLPenalty(rewards, c.in.v, m, beta); err == nil {
			for i := range r.Data {
				want := r.Data[i]
				if m.Data[i] == 1 {
					want -= beta * c.in.v.Data[i]
				}
				if rewards.Data[i] != want && !(math.IsNaN(want) && math.IsNaN(rewards.Data[i])) {
					t.Fatalf("AddKLPenalty at %d: %v, want %v", i, rewards.Data[i], want)
				}
			}
		} else {
			var ae *tensor.ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("AddKLPenalty: %v", err)
			}
			for i := range r.Data {
				if rewards.Data[i] != r.Data[i] && !math.IsNaN(r.Data[i]) {
					t.Fatalf("AddKLPenalty failed with %v but changed position %d", err, i)
				}
			}
		}
	})
}
