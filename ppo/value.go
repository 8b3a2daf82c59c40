package ppo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// ValueConfig configures the clipped critic loss.
type ValueConfig struct {
	// Clip is c: the new value may move at most c from the old value before
	// the clipped branch takes over (verl cliprange_value, 0.5). 0 means
	// unclipped, and OldValues may then be omitted.
	Clip float64
	// Reduction is the aggregation (verl loss_agg_mode). Default TokenMean.
	Reduction
}

// DefaultValueConfig returns verl's critic defaults: clip 0.5, token-mean.
func DefaultValueConfig() ValueConfig { return ValueConfig{Clip: 0.5} }

// Validate reports the first field of c that is out of its domain.
func (c ValueConfig) Validate() error {
	if !(c.Clip >= 0) || math.IsInf(c.Clip, 1) {
		return tensor.Errorf(tensor.ErrRange, "ValueConfig.Clip", nil, "%v, want a finite number ≥ 0", c.Clip)
	}
	return c.Reduction.validate("ValueConfig.")
}

// ValueInputs are the per-token arrays of one critic-loss call, all [B, T].
// Values at mask-0 positions are never read.
type ValueInputs[F tensor.Float] struct {
	// Values are the critic's current predictions; the gradient is taken
	// with respect to them.
	Values tensor.Batch[F]
	// OldValues are the predictions at rollout time; required when
	// ValueConfig.Clip > 0.
	OldValues tensor.Batch[F]
	// Returns are the regression targets (GAE returns).
	Returns tensor.Batch[F]
	// Mask is 1 for tokens the loss trains on.
	Mask tensor.Batch[F]
}

// ValueResult is what ValueLoss returns besides the gradient.
type ValueResult struct {
	// Loss = ½·agg(max((v−R)², (clip(v, v_old−c, v_old+c) − R)²)).
	Loss float64
	// ClipFrac is the fraction of valid tokens where the clipped branch won.
	ClipFrac float64
	// Tokens is the number of valid tokens.
	Tokens int
}

// ValueLoss computes the clipped critic loss of SPEC §1 and writes
// dLoss/dvalues into grad (length B·T, 0 at mask-0 positions): (v − R)
// times the aggregation weight, or 0 where the clipped branch strictly wins.
func ValueLoss[F tensor.Float](grad []F, in ValueInputs[F], cfg ValueConfig) (ValueResult, error) {
	if err := cfg.Validate(); err != nil {
		return ValueResult{}, fmt.Errorf("ppo: %w", err)
	}
	if err := in.Values.Check("values"); err != nil {
		return ValueResult{}, fmt.Errorf("ppo: %w", err)
	}
	shape := in.Values.Shape
	if shape.B == 0 || shape.T == 0 {
		return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrEmpty, "values", nil, "batch of shape [%d, %d] has no positions", shape.B, shape.T))
	}
	for _, x := range [...]struct {
		name string
		b    tensor.Batch[F]
	}{{"returns", in.Returns}, {"mask", in.Mask}} {
		if err := tensor.CheckShape(x.name, x.b, shape); err != nil {
			return ValueResult{}, fmt.Errorf("ppo: %w", err)
		}
	}
	clip := cfg.Clip
	if clip > 0 || !in.OldValues.IsZero() {
		if in.OldValues.IsZero() {
			return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrEmpty, "old_values", nil, "required when ValueConfig.Clip = %v", clip))
		}
		if err := tensor.CheckShape("old_values", in.OldValues, shape); err != nil {
			return ValueResult{}, fmt.Errorf("ppo: %w", err)
		}
	}
	if len(grad) != shape.Size() {
		return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrShape, "grad", nil, "length %d, want B·T = %d", len(grad), shape.Size()))
	}

	j := getJob[F]()
	defer putJob(j)
	j.setup(nil, Inputs[F]{Logp: in.Values}, Config{})
	total := 0
	for b := range shape.B {
		n := countRow(in.Mask.Row(b))
		if n < 0 {
			return ValueResult{}, fmt.Errorf("ppo: %w", maskError(in.Mask, b))
		}
		j.lengths[b] = n
		total += n
	}
	if err := rowWeights(j.coef, j.lengths, total, shape.T, cfg.Reduction); err != nil {
		return ValueResult{}, fmt.Errorf("ppo: %w", err)
	}

	var res ValueResult
	clipped := 0
	for b := range shape.B {
		v, ret, mask := in.Values.Row(b), in.Returns.Row(b), in.Mask.Row(b)
		var old []F
		if clip > 0 {
			old = in.OldValues.Row(b)
		}
		g := grad[b*shape.T : (b+1)*shape.T]
		coef := j.coef[b]
		var sum float64
		for t := range v {
			if mask[t] == 0 {
				g[t] = 0
				continue
			}
			x, r := float64(v[t]), float64(ret[t])
			e := x - r
			loss, d := e*e, e
			check := x + r
			if old != nil {
				o := float64(old[t])
				check += o
				ec := min(max(x, o-clip), o+clip) - r
				if ec*ec > loss {
					loss, d = ec*ec, 0
					clipped++
				}
			}
			if check-check != 0 {
				return ValueResult{}, fmt.Errorf("ppo: %w", nonFiniteAt(b, t,
					named[F]{"values", in.Values}, named[F]{"returns", in.Returns}, named[F]{"old_values", in.OldValues}))
			}
			sum += loss
			g[t] = F(coef * d)
			if !tensor.IsFinite(g[t]) {
				return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrRange, "grad", tensor.At(b, t),
					"%v overflows the storage type (values %v, returns %v)", coef*d, x, r))
			}
		}
		res.Loss += 0.5 * coef * sum
	}
	if math.IsInf(res.Loss, 0) {
		return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrRange, "loss", nil, "overflows float64"))
	}
	res.Tokens = total
	if total > 0 {
		res.ClipFrac = float64(clipped) / float64(total)
	}
	return res, nil
}

// named is an argument and its name, for error messages.
type named[F tensor.Float] struct {
	name string
	x    tensor.Batch[F]
}

// nonFiniteAt returns the error for the first of args (absent ones skipped)
// that is not finite at (b, t). Hot loops only notice that some input at
// (b, t) is bad; this names which.
func nonFiniteAt[F tensor.Float](b, t int, args ...named[F]) error {
	for _, a := range args {
		if a.x.IsZero() {
			continue
		}
		if v := a.x.At(b, t); !tensor.IsFinite(v) {
			return tensor.Errorf(tensor.ErrNonFinite, a.name, tensor.At(b, t), "%v", float64(v))
		}
	}
	panic("ppo: position flagged for a non-finite input has none")
}
