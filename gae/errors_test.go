package gae_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
)

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
			return gae.Advantages(tensor.MustNew[float32](1, 7), tensor.MustNew[float32](1, 8), x.r, x.v, x.m, tok)
		}, tensor.ErrShape, "adv"},
		{"ret length", func() error {
			x := base()
			return gae.BiLevel(tensor.MustNew[float32](1, 8), tensor.Batch[float32]{}, x.r, x.v, x.m, x.e, bi)
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
			return gae.Advantages(adv, ret, in.r, in.v, in.m, gae.Config{Gamma: 1, Lambda: 0.95, Whiten: true})
		}},
		{"BiLevel", func() error {
			return gae.BiLevel(adv, ret, in.r, in.v, in.m, in.e, gae.DefaultBiLevelConfig())
		}},
		{"TurnLevel", func() error {
			return gae.TurnLevel(adv, ret, in.r, in.v, in.m, in.e, gae.DefaultTurnConfig())
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
