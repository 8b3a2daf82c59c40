package gae_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
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
	err = gae.Advantages(adv, ret, in.r, in.v, in.m, cfg)
	return adv, ret, err
}

func (in inputs[F]) biLevel(cfg gae.BiLevelConfig) (adv, ret tensor.Batch[F], err error) {
	adv, ret = in.outputs()
	err = gae.BiLevel(adv, ret, in.r, in.v, in.m, in.e, cfg)
	return adv, ret, err
}

func (in inputs[F]) turnLevel(cfg gae.Config) (adv, ret tensor.Batch[F], err error) {
	adv, ret = in.outputs()
	err = gae.TurnLevel(adv, ret, in.r, in.v, in.m, in.e, cfg)
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
