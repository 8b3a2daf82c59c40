package ppo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// ValueConfig configures the critic loss. Its zero value is the PPO paper's
// own value loss, unclipped squared error with token-mean (Proximal Policy
// Optimization Algorithms, arXiv 1707.06347, Eq. 9: L^VF = (V − V^targ)²);
// DefaultValueConfig adds the value clip of OpenAI's baselines and verl.
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

// ValueLoss computes the clipped critic loss of docs/spec.md#policy-losses and writes
// dLoss/dvalues into grad, a batch of Values' shape [B, T] (0 at mask-0
// positions): (v − R) times the aggregation weight, or 0 where the clipped
// branch strictly wins. grad must not share memory with any input
// (ErrOverlap). The batches may instead all be packed with the same
// cu_seqlens (tensor.Packed), as for PolicyLoss.
func ValueLoss[F tensor.Float](grad tensor.Batch[F], in ValueInputs[F], cfg ValueConfig) (ValueResult, error) {
	if err := cfg.Validate(); err != nil {
		return ValueResult{}, fmt.Errorf("ppo: %w", err)
	}
	if err := in.Values.CheckLayout("values"); err != nil {
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
		if err := tensor.CheckLike(x.name, x.b, in.Values); err != nil {
			return ValueResult{}, fmt.Errorf("ppo: %w", err)
		}
	}
	clip := cfg.Clip
	if clip > 0 || !in.OldValues.IsZero() {
		if in.OldValues.IsZero() {
			return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrShape, "old_values", nil, "missing, required when ValueConfig.Clip = %v", clip))
		}
		if err := tensor.CheckLike("old_values", in.OldValues, in.Values); err != nil {
			return ValueResult{}, fmt.Errorf("ppo: %w", err)
		}
	}
	if err := tensor.CheckLike("grad", grad, in.Values); err != nil {
		return ValueResult{}, fmt.Errorf("ppo: %w", err)
	}
	for _, x := range [...]named[F]{{"values", in.Values}, {"old_values", in.OldValues}, {"returns", in.Returns}, {"mask", in.Mask}} {
		if err := tensor.CheckDisjoint("grad", grad.Data, x.name, x.x.Data); err != nil {
			return ValueResult{}, fmt.Errorf("ppo: %w", err)
		}
	}

	j := parallel.Get[policyJob[F]](jobs)
	defer putJob(j)
	j.setup(grad.Data, Inputs[F]{Logp: in.Values, Mask: in.Mask}, Config{})
	j.value, j.valueClip = in, clip
	j.phase = phaseLengths
	parallel.Rows(j, shape.B, shape.T)
	total := 0
	for b, n := range j.lengths {
		if n < 0 {
			return ValueResult{}, fmt.Errorf("ppo: %w", maskError(in.Mask, b))
		}
		total += n
	}
	if err := rowWeights(j.coef, j.lengths, total, shape.T, cfg.Reduction); err != nil {
		return ValueResult{}, fmt.Errorf("ppo: %w", err)
	}
	j.phase = phaseValue
	parallel.Rows(j, shape.B, shape.T)

	var res ValueResult
	clipped := 0
	for b := range j.rows {
		acc := &j.rows[b]
		switch acc.bad {
		case badInput:
			return ValueResult{}, fmt.Errorf("ppo: %w", nonFiniteAt(b, acc.badCol,
				named[F]{"values", in.Values}, named[F]{"returns", in.Returns}, named[F]{"old_values", in.OldValues}))
		case badOverflow:
			return ValueResult{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrRange, "grad", tensor.At(b, acc.badCol),
				"overflows the storage type (values %v, returns %v)",
				float64(in.Values.At(b, acc.badCol)), float64(in.Returns.At(b, acc.badCol))))
		}
		res.Loss += 0.5 * j.coef[b] * acc.policy
		clipped += acc.clipHigh
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

// valueRow computes row b of the critic loss: the sum of the per-token
// losses goes to rows[b].policy, the count of clipped tokens to clipHigh.
func (j *policyJob[F]) valueRow(b int) {
	acc := &j.rows[b]
	*acc = rowAcc{}
	in := &j.value
	g, _ := j.gradRow(b) // j.in.Logp is in.Values
	if j.lengths[b] == 0 {
		clear(g)
		return
	}
	v, ret, mask := in.Values.Row(b), in.Returns.Row(b), in.Mask.Row(b)
	clip := j.valueClip
	var old []F
	if clip > 0 {
		old = in.OldValues.Row(b)
	}
	coef := j.coef[b]
	var sum float64
	clipped := 0
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
			// Branches, not the min/max builtins: those handle NaN and
			// signed zeros at several times the cost, and x is finite.
			vc := x
			if vc < o-clip {
				vc = o - clip
			} else if vc > o+clip {
				vc = o + clip
			}
			if ec := vc - r; ec*ec > loss {
				loss, d = ec*ec, 0
				clipped++
			}
		}
		if check-check != 0 {
			acc.bad, acc.badCol = badInput, t
			return
		}
		sum += loss
		gv := F(coef*d + 0)
		if gv-gv != 0 {
			acc.bad, acc.badCol = badOverflow, t
			return
		}
		g[t] = gv
	}
	acc.policy, acc.clipHigh = sum, clipped
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
