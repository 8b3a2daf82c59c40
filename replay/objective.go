package replay

import (
	"fmt"
	"math"
	"slices"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// ObjectiveConfig configures the hybrid objective of AVATAR Eq. 3–4.
type ObjectiveConfig struct {
	// Loss is the clipped surrogate of both J_on and J_off (Eq. 2 of the
	// paper, "the same form" for both). Default ppo.DefaultConfig() with
	// the paper's KL weight β = 0.1 (§5, "λ_TAS = 0.3, α = 0.6, β = 0.1";
	// β weighs Eq. 2's KL to π_ref, so RefLogp is required in both parts):
	// ε 0.2 both ways and token-mean, as in the paper's Listing 1. Set
	// KLCoef to 0 to train without a reference model.
	Loss ppo.Config
	// Alpha is α of Eq. 3, the weight of J_off: 0.6, the value AVATAR §5
	// states. It must be > 0: the zero ObjectiveConfig is an error, not a
	// silent objective without replay (start from DefaultObjectiveConfig;
	// to train without replay, pass an empty off-policy part).
	Alpha float64
	// FreshOnlyKL is a guard, off by default: it drops Eq. 2's KL term
	// from the replayed part, so that β·D_KL is taken on the fresh part
	// only. The paper gives J_off "the same form as Equation 2", KL term
	// included, which is the default (the zero value). Why a caller might
	// want the guard: the KL to π_ref is a property of the policy, which
	// the fresh samples estimate without bias, while the k3 estimator on a
	// replayed token whose probability π_θ has since cut far below π_ref's
	// has gradient 1 − π_ref/π_θ, without bound — a stale sample pulls the
	// policy back towards what it unlearnt.
	FreshOnlyKL bool
	// TAS shapes the advantages of both parts (Algorithm 1, line 7);
	// tas.Uniform turns shaping off.
	TAS tas.Config
	// Group is the on-policy advantage (Eq. 1): GRPO, unbiased std, ε 1e-6.
	Group grpo.Config
	// Off is the off-policy advantage of Eq. 11.
	Off AdvantageConfig
}

// AVATAR's hyperparameters (§5, Implementation Details): α of Eq. 3 and
// β, the KL weight of Eq. 2.
const (
	DefaultAlpha  = 0.6
	DefaultKLCoef = 0.1
)

func defaultLoss() ppo.Config {
	c := ppo.DefaultConfig()
	c.KLCoef = DefaultKLCoef
	return c
}

// DefaultObjectiveConfig returns AVATAR's objective with the defaults above.
func DefaultObjectiveConfig() ObjectiveConfig {
	return ObjectiveConfig{
		Loss:  defaultLoss(),
		Alpha: DefaultAlpha,
		TAS:   tas.DefaultConfig(),
		Group: grpo.DefaultConfig(),
		Off:   DefaultAdvantageConfig(),
	}
}

// Validate reports the first field of c that is out of its domain.
func (c ObjectiveConfig) Validate() error {
	if c == (ObjectiveConfig{}) {
		return tensor.Errorf(tensor.ErrRange, "ObjectiveConfig", nil,
			"the zero value (α = 0 would turn replay off); start from DefaultObjectiveConfig()")
	}
	if err := c.Loss.Validate(); err != nil {
		return err
	}
	if !(c.Alpha > 0) || math.IsInf(c.Alpha, 1) {
		return tensor.Errorf(tensor.ErrRange, "ObjectiveConfig.Alpha", nil,
			"%v, want a finite number > 0 (start from DefaultObjectiveConfig(): α = %v; for no replay pass an empty off-policy part)", c.Alpha, DefaultAlpha)
	}
	if err := c.TAS.Validate(); err != nil {
		return err
	}
	if err := c.Group.Validate(); err != nil {
		return err
	}
	return c.Off.Validate()
}

// OnPolicy is the freshly generated part of a step: K_on responses per
// prompt, grouped for Eq. 1. All batches are [B_on, T_on].
type OnPolicy[F tensor.Float] struct {
	// Logp is log π_θ per token, OldLogp log π_θold of the rollout, Mask
	// 1 on the tokens trained on.
	Logp, OldLogp, Mask tensor.Batch[F]
	// RefLogp is log π_ref, required when Loss.KLCoef ≠ 0.
	RefLogp tensor.Batch[F]
	// ProxLogp, if given, makes the part decoupled PPO (AReaL): log π_prox
	// of the proximal policy, as ppo.Inputs.ProxLogp.
	ProxLogp tensor.Batch[F]
	// TokenWeights, if given, multiply each token's policy loss on top of
	// TAS — APPO's token weights, say — as ppo.Inputs.TokenWeights.
	TokenWeights tensor.Batch[F]
	// Rewards holds R(o_i), one per row.
	Rewards []F
	// Groups says which rows answer the same prompt
	// (grpo.Contiguous(K_on) for the usual layout).
	Groups grpo.Groups
	// Prompts, if given, holds each row's prompt id (Experience.Prompt),
	// so that StepResult.Rescued can tell which replayed rows answer a
	// vanished group's own prompt. Without it Rescued is 0.
	Prompts []uint64
}

// OffPolicy is the replayed part of a step: K_off experiences drawn by
// Buffer.Sample. All batches are [B_off, T_off] with B_off = len(Samples).
type OffPolicy[F tensor.Float] struct {
	// Logp is log π_θ of the replayed tokens under the current policy, and
	// Mask is 1 on the tokens trained on: row i must have exactly
	// len(Samples[i].Logp) of them, which receive the stored behaviour
	// log-probabilities in order.
	Logp, Mask tensor.Batch[F]
	// RefLogp is log π_ref, required when Loss.KLCoef ≠ 0 unless
	// FreshOnlyKL is set (then giving it is an error: it would be unread).
	RefLogp tensor.Batch[F]
	// ProxLogp, if given, makes the part decoupled PPO: the ratio is taken
	// to the proximal policy and each token weighted by π_prox/π_θoff,
	// capped (ppo.Inputs.ProxLogp, Loss.BehaveCap).
	ProxLogp tensor.Batch[F]
	// TokenWeights, if given, multiply each token's policy loss on top of
	// TAS (APPO's token weights, say).
	TokenWeights tensor.Batch[F]
	// Samples are the replayed experiences, one per row; their Reward and
	// Baseline give Eq. 11.
	Samples []Sampled
}

// StepResult is what Step returns besides the gradients.
type StepResult struct {
	// Loss = L_on + α·L_off, the value to minimise (L = −J).
	Loss float64
	// On and Off are the two ppo.PolicyLoss results; Off is before α.
	On, Off ppo.Result
	// OnAdvantages describe the on-policy groups (Eq. 1), OffAdvantages
	// the replayed batch (Eq. 11).
	OnAdvantages  grpo.Stats
	OffAdvantages AdvantageStats
	// Vanishing counts the on-policy groups of two or more responses whose
	// rewards are all equal, so that Eq. 1 gives them no gradient.
	// Rescued counts the prompts of such groups that replay gave a
	// gradient back to in this step: the off-policy part holds a row of
	// the same prompt (OnPolicy.Prompts) with a valid token and a non-zero
	// Eq. 11 advantage, and α > 0. Replayed rows of other prompts do not
	// count: they move the policy, but not on the prompt that lost its
	// signal. Without OnPolicy.Prompts, Rescued is 0.
	Vanishing, Rescued int
}

// Totals accumulate StepResults over an Objective's life.
type Totals struct {
	Steps, Groups, Vanishing, Rescued int
}

// RescuedFrac is the fraction of vanishing-advantage groups rescued by
// replay (0 when none vanished).
func (t Totals) RescuedFrac() float64 {
	if t.Vanishing == 0 {
		return 0
	}
	return float64(t.Rescued) / float64(t.Vanishing)
}

// Objective computes AVATAR's hybrid objective (Eq. 3–4) step after step,
// reusing its workspace so that a steady run allocates nothing. It is not
// safe for concurrent use.
type Objective[F tensor.Float] struct {
	cfg     ObjectiveConfig
	advOn   []F
	tokOn   []F
	oldOff  []F
	tokOff  []F
	advOff  []F
	rew     []float64
	base    []float64
	adv64   []float64
	kl      []float64
	lengths []int
	totals  Totals
}

// NewObjective returns an Objective with configuration cfg.
func NewObjective[F tensor.Float](cfg ObjectiveConfig) (*Objective[F], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &Objective[F]{cfg: cfg}, nil
}

// Config returns the objective's configuration.
func (o *Objective[F]) Config() ObjectiveConfig { return o.cfg }

// Totals returns the accumulated step statistics.
func (o *Objective[F]) Totals() Totals { return o.totals }

// OnAdvantages returns the last step's Eq. 1 advantage per on-policy row,
// before TAS. The slice is reused by the next Step.
func (o *Objective[F]) OnAdvantages() []F { return o.advOn }

// OffAdvantages returns the last step's Eq. 11 advantage per replayed row,
// before TAS. The slice is reused by the next Step.
func (o *Objective[F]) OffAdvantages() []F { return o.advOff }

// OffKL returns, per replayed row of the last step, an estimate of
// KL(π_θ‖π_θoff) from the behaviour policy's own tokens: the mean over the
// row's valid tokens of r·log r − (r − 1), r = π_θ/π_θoff (each term is ≥ 0
// and E_θoff[r] = 1, so the mean is unbiased), with log r clamped as the
// loss clamps it (±20 when the loss does not). It is what the hint trigger
// compares with its threshold. The slice is reused by the next Step.
func (o *Objective[F]) OffKL() []float64 { return o.kl }

// Step computes
//
//	L = L_on + α·L_off,  L = −J  (Eq. 3)
//
// where L_on is the clipped surrogate of the on-policy part with the GRPO
// advantages of its groups (Eq. 1) and L_off that of the replayed part with
// ratio π_θ/π_θoff over each experience's own stored behaviour
// log-probabilities (Eq. 4) and advantages (R − R̄(q))/(σ_off + ε)
// (Eq. 11). Both advantages are shaped by TAS, and each part is aggregated
// over its own tokens by ppo.PolicyLoss under the same configuration, as
// Eq. 3 adds two objectives. gradOn receives dL/dlogp of the on-policy
// tokens (a [B_on, T_on] batch) and gradOff dL/dlogp of the replayed ones,
// α included ([B_off, T_off]); they may be two parts of one slice but must
// not overlap each other or an input (ErrOverlap). Either part may be empty
// (B = 0, a zero Batch for its gradient), not both. On error the gradients
// are unspecified.
//
// Step takes a whole step: Eq. 1 needs whole groups and Eq. 11 the whole
// replayed batch. A trainer that splits a step into micro-batches computes
// the advantages once (grpo.Advantages, Advantages, tas.ApplySequence) and
// calls ppo.PolicyLoss per micro-batch with the step's token count
// (ppo.Reduction.TokenCount), scaling the replayed rows' gradient by α.
func (o *Objective[F]) Step(gradOn, gradOff tensor.Batch[F], on OnPolicy[F], off OffPolicy[F]) (StepResult, error) {
	var res StepResult
	o.advOn, o.advOff, o.kl = o.advOn[:0], o.advOff[:0], o.kl[:0]
	if on.Logp.B == 0 && off.Logp.B == 0 {
		return res, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "on.logp, off.logp", nil, "neither part has a sequence"))
	}
	if err := tensor.CheckDisjoint("grad_on", gradOn.Data, "grad_off", gradOff.Data); err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	nonzero := false
	if on.Logp.B > 0 {
		r, st, err := o.onPolicy(gradOn, on)
		if err != nil {
			return StepResult{}, fmt.Errorf("replay: on-policy part: %w", err)
		}
		res.On, res.OnAdvantages, res.Vanishing = r, st, st.Vanishing
		if len(on.Prompts) != 0 && len(on.Prompts) != on.Logp.B {
			return StepResult{}, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, "on.prompts", nil, "length %d, want one per row, B = %d", len(on.Prompts), on.Logp.B))
		}
	} else if len(gradOn.Data) != 0 || len(on.Rewards) != 0 {
		return res, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, "on", nil,
			"%d gradients and %d rewards for an empty on-policy part", len(gradOn.Data), len(on.Rewards)))
	}
	if off.Logp.B > 0 {
		r, st, nz, err := o.offPolicy(gradOff, off)
		if err != nil {
			return StepResult{}, fmt.Errorf("replay: off-policy part: %w", err)
		}
		res.Off, res.OffAdvantages, nonzero = r, st, nz
	} else if len(gradOff.Data) != 0 || len(off.Samples) != 0 {
		return res, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, "off", nil,
			"%d gradients and %d samples for an empty off-policy part", len(gradOff.Data), len(off.Samples)))
	}
	res.Loss = res.On.Loss + o.cfg.Alpha*res.Off.Loss
	if nonzero && len(on.Prompts) > 0 {
		res.Rescued = o.rescued(on.Prompts, off)
	}
	o.totals.Steps++
	o.totals.Groups += res.OnAdvantages.Groups
	o.totals.Vanishing += res.Vanishing
	o.totals.Rescued += res.Rescued
	return res, nil
}

func (o *Objective[F]) onPolicy(grad tensor.Batch[F], on OnPolicy[F]) (ppo.Result, grpo.Stats, error) {
	if err := on.Logp.Check("logp"); err != nil {
		return ppo.Result{}, grpo.Stats{}, err
	}
	shape := on.Logp.Shape
	if err := tensor.CheckShape("mask", on.Mask, shape); err != nil {
		return ppo.Result{}, grpo.Stats{}, err
	}
	if len(on.Rewards) != shape.B {
		return ppo.Result{}, grpo.Stats{}, tensor.Errorf(tensor.ErrShape, "rewards", nil, "length %d, want B = %d", len(on.Rewards), shape.B)
	}
	o.advOn = grow(o.advOn, shape.B)
	st, err := grpo.Advantages(o.advOn, on.Rewards, on.Groups, o.cfg.Group)
	if err != nil {
		return ppo.Result{}, st, err
	}
	o.tokOn = grow(o.tokOn, shape.Size())
	tok := tensor.Batch[F]{Shape: shape, Data: o.tokOn}
	if err := tas.ApplySequence(tok, o.advOn, on.Mask, o.cfg.TAS); err != nil {
		return ppo.Result{}, st, err
	}
	r, err := ppo.PolicyLoss(grad, ppo.Inputs[F]{
		Logp: on.Logp, OldLogp: on.OldLogp, Advantages: tok, Mask: on.Mask, RefLogp: on.RefLogp,
		ProxLogp: on.ProxLogp, TokenWeights: on.TokenWeights,
	}, o.cfg.Loss)
	return r, st, err
}

func (o *Objective[F]) offPolicy(grad tensor.Batch[F], off OffPolicy[F]) (ppo.Result, AdvantageStats, bool, error) {
	var st AdvantageStats
	if err := off.Logp.Check("logp"); err != nil {
		return ppo.Result{}, st, false, err
	}
	shape := off.Logp.Shape
	B, T := shape.B, shape.T
	if err := tensor.CheckShape("mask", off.Mask, shape); err != nil {
		return ppo.Result{}, st, false, err
	}
	if len(off.Samples) != B {
		return ppo.Result{}, st, false, tensor.Errorf(tensor.ErrShape, "samples", nil, "%d, want one per row, B = %d", len(off.Samples), B)
	}
	o.lengths = grow(o.lengths, B)
	if _, err := tensor.RowLengths(o.lengths, off.Mask); err != nil {
		return ppo.Result{}, st, false, err
	}
	o.rew, o.base, o.adv64 = grow(o.rew, B), grow(o.base, B), grow(o.adv64, B)
	for i := range off.Samples {
		s := &off.Samples[i]
		if len(s.Logp) != o.lengths[i] {
			return ppo.Result{}, st, false, tensor.Errorf(tensor.ErrShape, "samples", tensor.At(i),
				"%d behaviour log-probs for the %d valid tokens of mask row %d", len(s.Logp), o.lengths[i], i)
		}
		o.rew[i], o.base[i] = s.Reward, s.Baseline
	}
	st, err := Advantages(o.adv64, o.rew, o.base, o.cfg.Off)
	if err != nil {
		return ppo.Result{}, st, false, err
	}
	o.advOff = grow(o.advOff, B)
	nonzero := false
	for i, a := range o.adv64 {
		o.advOff[i] = F(a)
		if !tensor.IsFinite(o.advOff[i]) {
			return ppo.Result{}, st, false, tensor.Errorf(tensor.ErrRange, "advantages", tensor.At(i), "%v overflows %T", a, o.advOff[i])
		}
		nonzero = nonzero || (o.advOff[i] != 0 && o.lengths[i] > 0)
	}
	// Each row's behaviour log-probabilities go to its valid positions.
	o.oldOff = grow(o.oldOff, shape.Size())
	for i := range off.Samples {
		lp := off.Samples[i].Logp
		row, m := o.oldOff[i*T:(i+1)*T], off.Mask.Row(i)
		k := 0
		for t, v := range m {
			if v != 0 {
				row[t] = F(lp[k])
				k++
			} else {
				row[t] = 0
			}
		}
	}
	old := tensor.Batch[F]{Shape: shape, Data: o.oldOff}
	o.tokOff = grow(o.tokOff, shape.Size())
	tok := tensor.Batch[F]{Shape: shape, Data: o.tokOff}
	if err := tas.ApplySequence(tok, o.advOff, off.Mask, o.cfg.TAS); err != nil {
		return ppo.Result{}, st, false, err
	}
	loss, ref := o.cfg.Loss, off.RefLogp
	if o.cfg.FreshOnlyKL {
		if len(off.RefLogp.Data) != 0 {
			// An input the step would not read is an error, as in ppo
			// (RefLogp with KLCoef 0): the caller meant a KL it is not getting.
			return ppo.Result{}, st, false, tensor.Errorf(tensor.ErrRange, "off.RefLogp", nil,
				"given, but FreshOnlyKL is set, so it would be ignored; leave it out or clear FreshOnlyKL")
		}
		loss.KLCoef, ref = 0, tensor.Batch[F]{}
	}
	r, err := ppo.PolicyLoss(grad, ppo.Inputs[F]{
		Logp: off.Logp, OldLogp: old, Advantages: tok, Mask: off.Mask, RefLogp: ref,
		ProxLogp: off.ProxLogp, TokenWeights: off.TokenWeights,
	}, loss)
	if err != nil {
		return r, st, false, err
	}
	if alpha := o.cfg.Alpha; alpha != 1 {
		for i, g := range grad.Data {
			grad.Data[i] = F(float64(g) * alpha)
			if !tensor.IsFinite(grad.Data[i]) {
				return r, st, false, tensor.Errorf(tensor.ErrRange, "grad", tensor.At(i/T, i%T), "α·%v overflows %T", float64(g), grad.Data[i])
			}
		}
	}
	o.rowKL(off, old, o.cfg.Loss.LogRatioClamp)
	return r, st, nonzero, nil
}

// rescued counts the prompts among on-policy rows whose rows (two or more)
// all have a zero Eq. 1 advantage — their rewards are all equal — and that
// a replayed row of the same prompt with a valid token and a non-zero
// Eq. 11 advantage answers. It is quadratic in the rows and allocates
// nothing.
func (o *Objective[F]) rescued(prompts []uint64, off OffPolicy[F]) int {
	n := 0
	for i, p := range prompts {
		if slices.Index(prompts[:i], p) >= 0 {
			continue // counted with its first row
		}
		rows, vanished := 0, true
		for j := i; j < len(prompts) && vanished; j++ {
			if prompts[j] == p {
				rows++
				vanished = o.advOn[j] == 0
			}
		}
		if !vanished || rows < 2 {
			continue
		}
		for k := range off.Samples {
			if off.Samples[k].Prompt == p && o.advOff[k] != 0 && o.lengths[k] > 0 {
				n++
				break
			}
		}
	}
	return n
}

// rowKL fills o.kl with the OffKL estimate of every replayed row.
func (o *Objective[F]) rowKL(off OffPolicy[F], old tensor.Batch[F], clamp float64) {
	if clamp == 0 {
		clamp = 20
	}
	o.kl = grow(o.kl, off.Logp.B)
	for i := range o.kl {
		lp, ob, m := off.Logp.Row(i), old.Row(i), off.Mask.Row(i)
		var sum float64
		for t, v := range m {
			if v == 0 {
				continue
			}
			x := min(max(float64(lp[t])-float64(ob[t]), -clamp), clamp)
			r := math.Exp(x)
			sum += r*x - (r - 1)
		}
		o.kl[i] = 0
		if n := o.lengths[i]; n > 0 {
			o.kl[i] = sum / float64(n)
		}
	}
}

// grow returns s resized to n, reallocating only when it lacks capacity.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
