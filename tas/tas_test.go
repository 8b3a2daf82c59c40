package tas_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func must[F tensor.Float](rows ...[]float64) tensor.Batch[F] {
	x, err := tensor.FromRows[F](rows)
	if err != nil {
		panic(err)
	}
	return x
}

func weights[F tensor.Float](mask tensor.Batch[F], cfg tas.Config) (tensor.Batch[F], error) {
	w := tensor.MustNew[F](mask.B, mask.T)
	err := tas.Weights(w, mask, cfg)
	return w, err
}

func TestWeightsGolden(t *testing.T) {
	for _, c := range golden.Load(t, "tas_weights") {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			mask, cfg, err := conform.DecodeTASWeights(c.Request)
			require.NoError(t, err)
			var want struct {
				Weights [][]float64 `json:"weights"`
			}
			require.NoError(t, json.Unmarshal(c.Expected, &want))
			w, err := weights(mask, cfg)
			require.NoError(t, err)
			golden.CheckRows(t, "float64 weights", tensor.Rows[float64](w), want.Weights)
			mask32 := tensor.MustNew[float32](mask.B, mask.T)
			require.NoError(t, tensor.Convert(mask32, mask))
			w32, err := weights(mask32, cfg)
			require.NoError(t, err)
			golden.CheckRows(t, "float32 weights", tensor.Rows[float64](w32), want.Weights)
		})
	}
}

func TestWeightsByHand(t *testing.T) {
	par := func(l float64) tas.Config { return tas.Config{Lambda: l, Shape: tas.Parabolic} }
	inv := func(l float64) tas.Config { return tas.Config{Lambda: l, Shape: tas.Inverse} }
	uni := tas.Config{Lambda: 0.7, Shape: tas.Uniform}
	for _, c := range []struct {
		name       string
		mask, want []float64
		cfg        tas.Config
	}{
		// t̃ = 0, ¼, ½, ¾, 1: (2t̃−1)² = 1, ¼, 0, ¼, 1.
		{"parabolic L=5", []float64{1, 1, 1, 1, 1}, []float64{2, 1.25, 1, 1.25, 2}, par(1)},
		{"parabolic default L=3", []float64{1, 1, 1, 0}, []float64{1.3, 1, 1.3, 0}, tas.DefaultConfig()},
		{"parabolic L=2", []float64{0, 1, 1}, []float64{0, 1.3, 1.3}, par(0.3)},
		{"parabolic L=1", []float64{0, 0, 1, 0}, []float64{0, 0, 1, 0}, par(0.3)},
		{"no valid token", []float64{0, 0, 0}, []float64{0, 0, 0}, par(0.3)},
		{"inverse L=3", []float64{1, 1, 1}, []float64{1, 1.3, 1}, inv(0.3)},
		{"inverse L=2", []float64{1, 1}, []float64{1, 1}, inv(0.3)},
		{"inverse L=1", []float64{1}, []float64{1}, inv(0.3)},
		{"uniform", []float64{1, 0, 1, 1}, []float64{1, 0, 1, 1}, uni},
		// t̃ = 0, ¼, ½, ¾, 1: decay 1 − t̃, incline t̃.
		{"linear decay L=5", []float64{1, 1, 1, 1, 1}, []float64{1.4, 1.3, 1.2, 1.1, 1}, tas.Config{Lambda: 0.4, Shape: tas.LinearDecay}},
		{"linear incline L=5", []float64{1, 1, 0, 1, 1, 1}, []float64{1, 1.1, 0, 1.2, 1.3, 1.4}, tas.Config{Lambda: 0.4, Shape: tas.LinearIncline}},
		{"linear decay L=1", []float64{0, 1}, []float64{0, 1}, tas.Config{Lambda: 0.4, Shape: tas.LinearDecay}},
		{"λ = 0 inverse", []float64{1, 1, 1}, []float64{1, 1, 1}, inv(0)},
		// Positions count valid tokens only: the prompt and the
		// observation do not move the curve.
		{"non-prefix mask", []float64{0, 0, 1, 1, 0, 0, 1, 1, 1}, []float64{0, 0, 2, 1.25, 0, 0, 1, 1.25, 2}, par(1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := weights(must[float64](c.mask), c.cfg)
			require.NoError(t, err)
			golden.CheckVec(t, "weights", w.Data, c.want)
		})
	}
}

// TestWeightsShape checks properties of the curve on ragged random masks:
// symmetric in position, 1 + λ at the ends and 1 in the middle (parabolic),
// the mirror image for the inverse shape, zero off the mask.
func TestWeightsShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		T := 1 + rng.IntN(50)
		m := make([]float64, T)
		for i := range m {
			if rng.IntN(3) > 0 {
				m[i] = 1
			}
		}
		var valid []int
		for i, v := range m {
			if v == 1 {
				valid = append(valid, i)
			}
		}
		lam := 2 * rng.Float64()
		p, err := weights(must[float64](m), tas.Config{Lambda: lam, Shape: tas.Parabolic})
		require.NoError(t, err)
		q, err := weights(must[float64](m), tas.Config{Lambda: lam, Shape: tas.Inverse})
		require.NoError(t, err)
		L := len(valid)
		for k, i := range valid {
			j := valid[L-1-k]
			require.InDelta(t, p.Data[j], p.Data[i], 1e-12, "trial %d: not symmetric at valid tokens %d and %d", trial, k, L-1-k)
			require.InDelta(t, q.Data[j], q.Data[i], 1e-12, "trial %d: not symmetric at valid tokens %d and %d", trial, k, L-1-k)
			if L > 1 && math.Abs(p.Data[i]+q.Data[i]-(2+lam)) > 1e-12 {
				t.Fatalf("trial %d: parabolic %v + inverse %v at %d, want 2 + λ = %v", trial, p.Data[i], q.Data[i], k, 2+lam)
			}
			require.GreaterOrEqual(t, p.Data[i], 1-1e-12, "trial %d: weight outside [1, 1 + λ]", trial)
			require.LessOrEqual(t, p.Data[i], 1+lam+1e-12, "trial %d: weight outside [1, 1 + λ]", trial)
		}
		if L > 1 && (math.Abs(p.Data[valid[0]]-(1+lam)) > 1e-12 || math.Abs(q.Data[valid[0]]-1) > 1e-12) {
			t.Fatalf("trial %d: ends are %v and %v, want 1 + λ and 1", trial, p.Data[valid[0]], q.Data[valid[0]])
		}
		for i, v := range m {
			if v == 0 && (p.Data[i] != 0 || q.Data[i] != 0) {
				t.Fatalf("trial %d: masked position %d got weight", trial, i)
			}
		}
	}
}

func TestApply(t *testing.T) {
	mask := must[float32]([]float64{1, 1, 1, 1, 1, 0}, []float64{0, 0, 0, 0, 0, 0}, []float64{0, 1, 0, 1, 1, 0})
	cfg := tas.Config{Lambda: 1, Shape: tas.Parabolic}
	w, err := weights(mask, cfg)
	require.NoError(t, err)
	// One advantage per response; the empty row's NaN is never read.
	adv := []float32{2, float32(math.NaN()), -0.5}
	seq := tensor.MustNew[float32](3, 6)
	require.NoError(t, tas.ApplySequence(seq, adv, mask, cfg))
	for b := range 3 {
		for i := range 6 {
			want := float32(0)
			if mask.At(b, i) == 1 {
				want = w.At(b, i) * adv[b]
			}
			require.Equal(t, want, seq.At(b, i), "ApplySequence[%d,%d]", b, i)
		}
	}
	// Per-token advantages shaped in place; garbage on masked tokens.
	tok := must[float32]([]float64{1, 2, 3, 4, 5, math.Inf(1)}, []float64{math.NaN(), 0, 0, 0, 0, 0}, []float64{9, -1, 9, 1, 2, 9})
	orig := append([]float32(nil), tok.Data...)
	require.NoError(t, tas.ApplyTokens(tok, tok, mask, cfg))
	for i, m := range mask.Data {
		want := float32(0)
		if m == 1 {
			want = w.Data[i] * orig[i]
		}
		require.Equal(t, want, tok.Data[i], "ApplyTokens at %d", i)
	}
}

func TestParseCurve(t *testing.T) {
	for _, s := range []tas.Curve{tas.Parabolic, tas.Uniform, tas.Inverse, tas.LinearDecay, tas.LinearIncline} {
		got, err := tas.ParseCurve(s.String())
		require.NoError(t, err, "ParseCurve(%q)", s.String())
		assert.Equal(t, s, got, "ParseCurve(%q)", s.String())
		// The deprecated name still works.
		old, err := tas.ParseShape(s.String())
		require.NoError(t, err, "ParseShape(%q)", s.String())
		assert.Equal(t, s, old, "ParseShape(%q)", s.String())
	}
	_, err := tas.ParseCurve("linear")
	assert.Error(t, err, `ParseCurve("linear") succeeded`)
	if s := tas.Curve(9).String(); s != "Curve(9)" {
		t.Errorf("Curve(9).String() = %q", s)
	}
	if c := tas.DefaultConfig(); c != (tas.Config{Lambda: 0.3, Shape: tas.Parabolic}) || c.Validate() != nil {
		t.Errorf("DefaultConfig() = %+v", c)
	}
}

func TestBadInput(t *testing.T) {
	mask := must[float32]([]float64{1, 1, 0}, []float64{0, 1, 1})
	dst := func() tensor.Batch[float32] { return tensor.MustNew[float32](2, 3) }
	cfg := tas.DefaultConfig()
	for _, c := range []struct {
		name string
		call func() error
		kind error
		want string
	}{
		{"λ < 0", func() error { return tas.Weights(dst(), mask, tas.Config{Lambda: -0.1}) }, tensor.ErrRange, "Config.Lambda"},
		{"λ NaN", func() error { return tas.Weights(dst(), mask, tas.Config{Lambda: math.NaN()}) }, tensor.ErrRange, "Config.Lambda"},
		{"λ Inf", func() error { return tas.ApplyTokens(dst(), dst(), mask, tas.Config{Lambda: math.Inf(1)}) }, tensor.ErrRange, "Config.Lambda"},
		{"shape", func() error { return tas.Weights(dst(), mask, tas.Config{Lambda: 0.3, Shape: 7}) }, tensor.ErrRange, "Config.Shape"},
		{"mask entry", func() error { return tas.Weights(dst(), must[float32]([]float64{1, 1, 0}, []float64{0, 0.5, 1}), cfg) }, tensor.ErrMask, "mask[1,1]"},
		{"dst shape", func() error { return tas.Weights(tensor.MustNew[float32](3, 2), mask, cfg) }, tensor.ErrShape, "dst"},
		{"mask data", func() error {
			return tas.Weights(dst(), tensor.Batch[float32]{Shape: mask.Shape, Data: mask.Data[:4]}, cfg)
		}, tensor.ErrShape, "mask"},
		{"adv length", func() error { return tas.ApplySequence(dst(), []float32{1}, mask, cfg) }, tensor.ErrShape, "adv"},
		{"sequence adv NaN", func() error { return tas.ApplySequence(dst(), []float32{1, float32(math.NaN())}, mask, cfg) }, tensor.ErrNonFinite, "adv[1]"},
		{"token adv Inf", func() error {
			return tas.ApplyTokens(dst(), must[float32]([]float64{1, 1, 0}, []float64{0, 1, math.Inf(-1)}), mask, cfg)
		}, tensor.ErrNonFinite, "adv[1,2]"},
		{"token adv shape", func() error { return tas.ApplyTokens(dst(), tensor.MustNew[float32](2, 2), mask, cfg) }, tensor.ErrShape, "adv"},
		{"weights overflow float32", func() error { return tas.Weights(dst(), mask, tas.Config{Lambda: 1e39}) }, tensor.ErrRange, "dst[0,0]"},
		{"sequence overflow", func() error { return tas.ApplySequence(dst(), []float32{3e38, 1}, mask, cfg) }, tensor.ErrRange, "dst[0,0]"},
		{"token overflow", func() error {
			return tas.ApplyTokens(dst(), must[float32]([]float64{1, 1, 0}, []float64{0, 1, 3e38}), mask, cfg)
		}, tensor.ErrRange, "dst[1,2]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			require.Error(t, err, "no error, want %v naming %q", c.kind, c.want)
			var ae *tensor.ArgError
			require.ErrorIs(t, err, c.kind, "error: want a *tensor.ArgError of kind naming")
			require.ErrorAs(t, err, &ae, "error: want a *tensor.ArgError of kind naming")
			assert.Contains(t, err.Error(), c.want, "error: want a *tensor.ArgError of kind naming")
		})
	}
	// A float64 batch holds those weights.
	_, err := weights(must[float64]([]float64{1, 1}), tas.Config{Lambda: 1e39})
	assert.NoError(t, err, "float64 weights with λ = 1e39")
}

// TestDeterministic checks that a batch split across the CPUs gives the
// same bits as each row alone.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const B, T = 40, 2000
	mask := tensor.MustNew[float32](B, T)
	for i := range mask.Data {
		if rng.IntN(4) > 0 {
			mask.Data[i] = 1
		}
	}
	w, err := weights(mask, tas.DefaultConfig())
	require.NoError(t, err)
	for b := range B {
		row, _ := tensor.FromSlice(mask.Row(b), 1, T)
		one, err := weights(row, tas.DefaultConfig())
		require.NoError(t, err)
		for i, x := range one.Data {
			require.Equal(t, w.At(b, i), x, "row %d position %d: batch, alone", b, i)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	mask := tensor.MustNew[float32](64, 1024)
	for i := range mask.Data {
		mask.Data[i] = float32(i % 2)
	}
	dst := tensor.MustNew[float32](64, 1024)
	adv := make([]float32, 64)
	cfg := tas.DefaultConfig()
	for _, c := range []struct {
		name string
		call func()
	}{
		{"Weights", func() { _ = tas.Weights(dst, mask, cfg) }},
		{"ApplySequence", func() { _ = tas.ApplySequence(dst, adv, mask, cfg) }},
		{"ApplyTokens", func() { _ = tas.ApplyTokens(dst, dst, mask, cfg) }},
	} {
		c.call()
		if n := testing.AllocsPerRun(20, c.call); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, n)
		}
	}
}

// weight is a named storage type, which the job recycling treats apart.
type weight float64

func TestNamedFloatType(t *testing.T) {
	for range 3 { // the second call reuses a job
		w, err := weights(must[weight]([]float64{1, 1, 1}), tas.DefaultConfig())
		require.NoError(t, err)
		require.Equal(t, []weight{1.3, 1, 1.3}, w.Data)
	}
}
