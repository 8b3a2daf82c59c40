package bench

import (
	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/tensor"
)

func init() {
	Register("gae", "cpu", gaeBench)
	Register("gae_whiten", "cpu", gaeWhitenBench)
	Register("bilevel_gae", "cpu", bilevelBench)
}

// GAEConfig is the configuration `rlpost bench -op gae` measures: γ = 1,
// λ = 0.95, no whitening.
func GAEConfig() gae.Config { return gae.Config{Gamma: 1, Lambda: 0.95} }

// BiLevelConfig is the configuration of `rlpost bench -op bilevel_gae`: the
// same γ and λ at both levels as GAEConfig, no whitening.
func BiLevelConfig() gae.BiLevelConfig {
	return gae.BiLevelConfig{GammaToken: 1, LambdaToken: 0.95, GammaTurn: 1, LambdaTurn: 0.95}
}

// TurnLength is the turn length of `rlpost bench -op bilevel_gae`.
const TurnLength = 64

func gaeBench(d *benchdata.Batch) (Iteration, Iteration, error) { return tokenGAE(d, false) }

// gaeWhitenBench is gae with whitening over the batch's valid tokens.
func gaeWhitenBench(d *benchdata.Batch) (Iteration, Iteration, error) { return tokenGAE(d, true) }

func tokenGAE(d *benchdata.Batch, whiten bool) (Iteration, Iteration, error) {
	cfg := GAEConfig()
	cfg.Whiten = whiten
	adv, ret := tensor.MustNew[float32](d.Shape.B, d.Shape.T), tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	return func() error {
		return gae.Advantages(adv, ret, d.Rewards, d.Values, d.Mask, cfg)
	}, nil, nil
}

func bilevelBench(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := BiLevelConfig()
	ends, err := TurnEnds(d, TurnLength)
	if err != nil {
		return nil, nil, err
	}
	adv, ret := tensor.MustNew[float32](d.Shape.B, d.Shape.T), tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	return func() error {
		return gae.BiLevel(adv, ret, d.Rewards, d.Values, d.Mask, ends, cfg)
	}, nil, nil
}

// TurnEnds returns the turn-end mask of the bench's bilevel_gae batch: a
// turn end after every n valid tokens of a row, and at the row's last valid
// token, so that no valid token follows the last turn end.
func TurnEnds(d *benchdata.Batch, n int) (tensor.Batch[float32], error) {
	ends, err := tensor.New[float32](d.Shape.B, d.Shape.T)
	if err != nil {
		return ends, err
	}
	for b := range d.Shape.B {
		m, e := d.Mask.Row(b), ends.Row(b)
		k, last := 0, -1
		for t, v := range m {
			if v != 1 {
				continue
			}
			k++
			last = t
			if k%n == 0 {
				e[t] = 1
			}
		}
		if last >= 0 {
			e[last] = 1
		}
	}
	return ends, nil
}
