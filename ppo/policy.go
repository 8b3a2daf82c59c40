package ppo

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// Inputs are the per-token arrays of one policy-loss call, all of shape
// [B, T]. Values at mask-0 positions are never read, so padding may hold
// anything, −Inf log-probabilities included.
type Inputs[F tensor.Float] struct {
	// Logp is log π_θ of each token under the policy being trained; the
	// gradient is taken with respect to it.
	Logp tensor.Batch[F]
	// OldLogp is log π_old, the behaviour policy that generated the tokens.
	OldLogp tensor.Batch[F]
	// Advantages holds A per token (a sequence's advantage broadcast to its
	// tokens for outcome rewards).
	Advantages tensor.Batch[F]
	// Mask is 1 for tokens the loss trains on, 0 elsewhere.
	Mask tensor.Batch[F]
	// ProxLogp, if given, makes the loss decoupled PPO (AReaL): the ratio
	// is exp(logp − prox_logp) and each token's loss is multiplied by the
	// behaviour weight exp(prox_logp − old_logp), capped per the Config.
	ProxLogp tensor.Batch[F]
	// RefLogp is log π_ref of the reference policy; required when
	// Config.KLCoef > 0.
	RefLogp tensor.Batch[F]
	// TokenWeights, if given, multiply the policy term of each token's loss
	// (TAS, APPO, or any weighting ≥ 0); they do not touch the KL term.
	TokenWeights tensor.Batch[F]
}

// Stats are the quantities a trainer logs after a policy-loss call. Fractions
// and means are over valid tokens.
type Stats struct {
	// Tokens is the number of valid tokens; Sequences the number of rows
	// with at least one.
	Tokens, Sequences int
	// ClipFracHigh is the fraction of tokens whose ratio was clipped from
	// above with A > 0 (no gradient); ClipFracLow from below with A < 0.
	ClipFracHigh, ClipFracLow float64
	// DualClipFrac is the fraction of tokens with A < 0 whose loss the dual
	// clip bounded.
	DualClipFrac float64
	// MeanRatio is the mean importance ratio (per token, or each sequence's
	// ratio counted once per token at the sequence level).
	MeanRatio float64
	// ApproxKL is the mean of −(logp − old_logp) (of −(logp − prox_logp) in
	// decoupled PPO): the k1 estimate of KL(π_old‖π_θ).
	ApproxKL float64
	// KL is the mean KL estimate to the reference (0 without RefLogp).
	KL float64
	// MeanBehaveWeight and MaxBehaveWeight describe the decoupled-PPO
	// behaviour weights after capping; CappedFrac is the fraction capped.
	// They are 1, 1 and 0 without ProxLogp.
	MeanBehaveWeight, MaxBehaveWeight, CappedFrac float64
}

// Result is what PolicyLoss returns besides the gradient.
type Result struct {
	// Loss = PolicyLoss + KLLoss, the value to minimise.
	Loss float64
	// PolicyLoss is the aggregated clipped surrogate.
	PolicyLoss float64
	// KLLoss is β·agg(KL).
	KLLoss float64
	Stats
}

// PolicyLoss computes the clipped-surrogate policy loss of docs/spec.md#policy-losses and writes
// dLoss/dlogp into grad (length B·T, 0 at mask-0 positions). It allocates
// nothing in steady state and splits rows across the CPUs. On error the
// contents of grad are unspecified.
func PolicyLoss[F tensor.Float](grad []F, in Inputs[F], cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, fmt.Errorf("ppo: %w", err)
	}
	if err := in.validate(cfg, len(grad)); err != nil {
		return Result{}, fmt.Errorf("ppo: %w", err)
	}
	j := getJob[F]()
	defer putJob(j)
	j.setup(grad, in, cfg)

	j.phase = phaseLengths
	parallel.Rows(j, in.Logp.B, in.Logp.T)
	total := 0
	for b, n := range j.lengths {
		if n < 0 {
			return Result{}, fmt.Errorf("ppo: %w", maskError(in.Mask, b))
		}
		total += n
	}
	if err := rowWeights(j.coef, j.lengths, total, in.Logp.T, cfg.Reduction); err != nil {
		return Result{}, fmt.Errorf("ppo: %w", err)
	}
	j.phase = phaseLoss
	parallel.Rows(j, in.Logp.B, in.Logp.T)
	return j.combine(total)
}

// useAVX2 selects the assembly kernel for float32 rows; tests turn it off to
// compare the kernel with the Go loop.
var useAVX2 = kernel.HasAVX2

func (in *Inputs[F]) validate(cfg Config, gradLen int) error {
	if err := in.Logp.Check("logp"); err != nil {
		return err
	}
	shape := in.Logp.Shape
	if shape.B == 0 || shape.T == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "logp", nil, "batch of shape [%d, %d] has no positions", shape.B, shape.T)
	}
	for _, x := range [...]struct {
		name string
		b    tensor.Batch[F]
	}{{"old_logp", in.OldLogp}, {"advantages", in.Advantages}, {"mask", in.Mask}} {
		if err := tensor.CheckShape(x.name, x.b, shape); err != nil {
			return err
		}
	}
	for _, x := range [...]struct {
		name string
		b    tensor.Batch[F]
	}{{"prox_logp", in.ProxLogp}, {"ref_logp", in.RefLogp}, {"token_weights", in.TokenWeights}} {
		if x.b.IsZero() {
			continue
		}
		if err := tensor.CheckShape(x.name, x.b, shape); err != nil {
			return err
		}
	}
	if cfg.KLCoef != 0 && in.RefLogp.IsZero() {
		return tensor.Errorf(tensor.ErrEmpty, "ref_logp", nil, "required when Config.KLCoef = %v", cfg.KLCoef)
	}
	if gradLen != shape.Size() {
		return tensor.Errorf(tensor.ErrShape, "grad", nil, "length %d, want B·T = %d", gradLen, shape.Size())
	}
	return nil
}

func maskError[F tensor.Float](mask tensor.Batch[F], b int) error {
	for t, v := range mask.Row(b) {
		if v != 0 && v != 1 {
			return tensor.Errorf(tensor.ErrMask, "mask", tensor.At(b, t), "%v", float64(v))
		}
	}
	panic("ppo: row flagged for a bad mask has none")
}

const (
	phaseLengths = iota
	phaseLoss
	phaseValue
)

// Reasons a row stops early; the first bad row (in row order) is reported,
// so errors do not depend on scheduling.
const (
	badNone = iota
	badInput
	badWeight
	badOverflow
)

// rowAcc holds one row's sums; rows are combined in order afterwards so the
// result is the same bits whatever the number of workers.
type rowAcc struct {
	policy, kl        float64 // Σ over valid tokens, before the row weight
	ratio, negDelta   float64
	behave, behaveMax float64
	clipHigh, clipLow int
	dual, capped      int
	bad, badCol       int
	_                 [4]int64 // 128 bytes: neighbouring rows never share a cache line
}

type policyJob[F tensor.Float] struct {
	phase   int
	in      Inputs[F]
	cfg     Config
	grad    []F
	fastExp bool
	lengths []int
	coef    []float64
	rows    []rowAcc

	// The critic loss runs on the same machinery.
	value     ValueInputs[F]
	valueClip float64
}

// Jobs are recycled through free lists, one per storage type, so that
// steady-state calls allocate nothing whichever processor they run on.
// Named float types get a new job each call.
var jobs32, jobs64 = parallel.NewFree[policyJob[float32]](4), parallel.NewFree[policyJob[float64]](4)

func jobs[F tensor.Float]() *parallel.Free[policyJob[F]] {
	return parallel.Pick[policyJob[F]](jobs32, jobs64)
}

func getJob[F tensor.Float]() *policyJob[F] { return jobs[F]().Get() }

func putJob[F tensor.Float](j *policyJob[F]) {
	j.in, j.grad, j.value = Inputs[F]{}, nil, ValueInputs[F]{}
	jobs[F]().Put(j)
}

func (j *policyJob[F]) setup(grad []F, in Inputs[F], cfg Config) {
	var z F
	j.in, j.cfg, j.grad = in, cfg, grad
	// float32 results cannot see kernel.Exp's error; float64 callers
	// (finite-difference checks among them) get math.Exp's last bits.
	j.fastExp = unsafe.Sizeof(z) == 4
	b := in.Logp.B
	if cap(j.lengths) < b {
		j.lengths = make([]int, b)
		j.coef = make([]float64, b)
		j.rows = make([]rowAcc, b)
	}
	j.lengths, j.coef, j.rows = j.lengths[:b], j.coef[:b], j.rows[:b]
}

func (j *policyJob[F]) Run(b int) {
	switch j.phase {
	case phaseLengths:
		j.lengths[b] = countRow(j.in.Mask.Row(b))
	case phaseValue:
		j.valueRow(b)
	case phaseLoss:
		j.rows[b] = rowAcc{behaveMax: 1}
		if j.cfg.RatioLevel == SequenceRatio {
			j.sequenceRow(b)
		} else {
			j.tokenRow(b)
		}
	}
}

// countRow returns the number of ones in a mask row, or −1 if an entry is
// neither 0 nor 1.
func countRow[F tensor.Float](m []F) int {
	var z F
	if unsafe.Sizeof(z) == 4 && len(m) > 0 {
		// float32 storage: the vectorised count.
		return kernel.CountMask(unsafe.Slice((*float32)(unsafe.Pointer(&m[0])), len(m)))
	}
	n := 0
	for _, v := range m {
		if v == 1 {
			n++
		} else if v != 0 {
			return -1
		}
	}
	return n
}

func (j *policyJob[F]) exp(x float64) float64 {
	if j.fastExp {
		return kernel.Exp(x)
	}
	return math.Exp(x)
}

// behaveWeight returns the decoupled-PPO behaviour weight for the log-ratio
// x = prox_logp − old_logp after capping, and whether the cap bound.
func (j *policyJob[F]) behaveWeight(x float64) (float64, bool) {
	return j.capBehave(j.exp(x))
}

// behaveCap returns the threshold above which a behaviour weight is capped
// and what it becomes then: the cap itself (truncate) or 0 (mask). Without a
// cap the threshold is +Inf.
func (j *policyJob[F]) behaveCap() (at, to float64) {
	if j.cfg.BehaveCap == 0 {
		return math.Inf(1), 0
	}
	if j.cfg.BehaveCapMode == CapMask {
		return j.cfg.BehaveCap, 0
	}
	return j.cfg.BehaveCap, j.cfg.BehaveCap
}

// capBehave caps a behaviour weight w = exp(prox_logp − old_logp).
func (j *policyJob[F]) capBehave(w float64) (float64, bool) {
	at, to := j.behaveCap()
	return capWeight(w, at, to)
}

// capWeight caps a behaviour weight w with the bounds of behaveCap: above at
// it becomes to; an infinite weight left uncapped counts 0 (docs/spec.md#policy-losses: a
// non-finite log-ratio gives weight 0). It reports whether the cap bound.
func capWeight(w, at, to float64) (float64, bool) {
	switch {
	case w > at:
		return to, true
	case w > math.MaxFloat64:
		return 0, false
	}
	return w, false
}

// kl returns the KL estimate for x = logp − ref_logp and its derivative.
func (j *policyJob[F]) kl(x float64) (float64, float64) {
	switch j.cfg.KLEstimator {
	case K1:
		return x, 1
	case K2:
		return 0.5 * x * x, x
	}
	return j.k3(j.exp(-x), x)
}

// k3 returns K3's value and derivative given e = e^{−x}.
func (j *policyJob[F]) k3(e, x float64) (float64, float64) {
	v, d := e+x-1, 1-e
	if c := j.cfg.KLClamp; c > 0 && (v > c || v < -c) {
		return math.Copysign(c, v), 0
	}
	return v, d
}

// clipper holds the clip bounds of the surrogate: lo = 1 − ε_low,
// hi = 1 + ε_high, dual = c (+Inf when dual clip is off).
type clipper struct{ lo, hi, dual float64 }

func (c Config) clipper() clipper {
	dual := math.Inf(1)
	if c.DualClip > 0 {
		dual = c.DualClip
	}
	return clipper{1 - c.ClipLow, 1 + c.ClipHigh, dual}
}

// clamps returns the log-ratio clamp and the k3 clamp as bounds that the
// hot loops compare against directly: +Inf where the clamp is off.
func (c Config) clamps() (logRatio, kl float64) {
	logRatio, kl = math.Inf(1), math.Inf(1)
	if c.LogRatioClamp > 0 {
		logRatio = c.LogRatioClamp
	}
	if c.KLClamp > 0 {
		kl = c.KLClamp
	}
	return logRatio, kl
}

// Which bound of the surrogate is active for a token.
const (
	clipNone = iota
	clipHigh // a > 0 and r > 1 + ε_high
	clipLow  // a < 0 and r < 1 − ε_low
	clipDual // a < 0 and r > c
)

// surrogate returns the per-token loss max(−a·r, −a·clip(r, lo, hi)),
// bounded by −c·a when a < 0, the multiplier g ∈ {0, 1} of its derivative
// −a·r, and which bound is active. Written as cases rather than as max/min
// so that it inlines and branches predictably; on the bounds themselves
// (r == hi, r == lo, r == c) the unclipped branch is taken, matching
// torch's inclusive clamp.
func (c clipper) surrogate(r, a float64) (loss, g float64, clip int) {
	switch {
	case a > 0 && r > c.hi:
		return -a * c.hi, 0, clipHigh
	case a < 0 && r < c.lo:
		return -a * c.lo, 0, clipLow
	case a < 0 && r > c.dual:
		return -a * c.dual, 0, clipDual
	}
	return -a * r, 1, clipNone
}

// block is how many tokens the token-level kernel handles per pass: the
// exponentials of a block are evaluated together (see kernel.ExpSlice), and
// its scratch arrays stay in L1.
const block = 256

// expSlice sets dst[i] = e^src[i], fast for float32 storage and with
// math.Exp's precision for float64.
func (j *policyJob[F]) expSlice(dst, src []float64) {
	if j.fastExp {
		kernel.ExpSlice(dst, src)
		return
	}
	for i, x := range src {
		dst[i] = math.Exp(x)
	}
}

// rowSums are the running sums of one row of the token-level kernel.
type rowSums struct {
	policy, kl, negDelta, ratio float64
	behave, behaveMax           float64
	clips                       [4]int // indexed by clipNone, clipHigh, clipLow, clipDual
	capped                      int
}

// tokenRow is the token-level kernel for row b: the AVX2 assembly for
// float32 storage where the processor has it (internal/kernel), with the Go
// loop for the last T mod 4 tokens, and the Go loop alone otherwise. A row
// the assembly flags as bad is recomputed in Go to name the position.
func (j *policyJob[F]) tokenRow(b int) {
	acc := &j.rows[b]
	T := j.in.Logp.T
	if j.lengths[b] == 0 {
		clear(j.grad[b*T : (b+1)*T])
		return
	}
	s := rowSums{behaveMax: 1}
	from := 0
	if j.fastExp && useAVX2 && T >= 4 {
		if j.kernelRow(b, &s) {
			from = T &^ 3
		} else {
			s = rowSums{behaveMax: 1}
		}
	}
	if bad, col := j.tokenRange(b, from, T, &s); bad != badNone {
		acc.bad, acc.badCol = bad, col
		return
	}
	acc.policy, acc.kl, acc.negDelta, acc.ratio = s.policy, s.kl, s.negDelta, s.ratio
	acc.behave, acc.behaveMax, acc.capped = s.behave, s.behaveMax, s.capped
	acc.clipLow, acc.clipHigh, acc.dual = s.clips[clipLow], s.clips[clipHigh], s.clips[clipDual]
}

// kernelRow runs the AVX2 kernel on the first T&^3 tokens of row b (F is
// float32 here) and adds its sums to s; it reports false if a lane was bad.
func (j *policyJob[F]) kernelRow(b int, s *rowSums) bool {
	in := &j.in
	ptr := func(x tensor.Batch[F]) *float32 {
		if x.IsZero() {
			return nil
		}
		return (*float32)(unsafe.Pointer(&x.Data[b*x.T]))
	}
	flag := func(x tensor.Batch[F]) int64 {
		if x.IsZero() {
			return 0
		}
		return 1
	}
	cfg := &j.cfg
	clip := cfg.clipper()
	clamp, klClamp := cfg.clamps()
	capAt, capTo := j.behaveCap()
	k := &kernel.PolicyTokens{
		Logp: ptr(in.Logp), Old: ptr(in.OldLogp), Adv: ptr(in.Advantages), Mask: ptr(in.Mask),
		Prox: ptr(in.ProxLogp), Ref: ptr(in.RefLogp), TW: ptr(in.TokenWeights),
		Grad:    (*float32)(unsafe.Pointer(&j.grad[b*in.Logp.T])),
		N:       int64(in.Logp.T),
		HasProx: flag(in.ProxLogp), HasRef: flag(in.RefLogp), HasTW: flag(in.TokenWeights),
		Lo: kernel.Broadcast(clip.lo), Hi: kernel.Broadcast(clip.hi), Dual: kernel.Broadcast(clip.dual),
		Clamp: kernel.Broadcast(clamp), NegClamp: kernel.Broadcast(-clamp),
		Beta: kernel.Broadcast(cfg.KLCoef), Coef: kernel.Broadcast(j.coef[b]),
		KLClamp: kernel.Broadcast(klClamp), CapAt: kernel.Broadcast(capAt), CapTo: kernel.Broadcast(capTo),
		BehaveMax: kernel.Broadcast(1),
	}
	if k.HasRef != 0 {
		k.KL = int64(cfg.KLEstimator) + 1
	}
	k.Run()
	if k.Bad != 0 {
		return false
	}
	s.policy += kernel.Sum(k.Policy)
	s.kl += kernel.Sum(k.KLSum)
	s.negDelta += kernel.Sum(k.NegDelta)
	s.ratio += kernel.Sum(k.Ratio)
	s.behave += kernel.Sum(k.Behave)
	s.behaveMax = max(s.behaveMax, k.BehaveMax[0], k.BehaveMax[1], k.BehaveMax[2], k.BehaveMax[3])
	s.clips[clipHigh] += int(kernel.Sum(k.High))
	s.clips[clipLow] += int(kernel.Sum(k.Low))
	s.clips[clipDual] += int(kernel.Sum(k.DualN))
	s.capped += int(kernel.Sum(k.Capped))
	return true
}

// tokenRange is the token-level kernel in Go for tokens [from, to) of row b,
// adding to s. Each block of tokens takes three passes: gather the
// log-ratios (validating as it goes), exponentiate them together, then form
// losses and gradients. It returns the kind and column of the first bad
// token, if any.
func (j *policyJob[F]) tokenRange(b, from, to int, s *rowSums) (bad, col int) {
	in := &j.in
	T := in.Logp.T
	coef := j.coef[b]
	row := func(x tensor.Batch[F]) []F {
		if x.IsZero() {
			return nil
		}
		return x.Data[b*T+from : b*T+to]
	}
	lp, old, adv, mask := row(in.Logp), row(in.OldLogp), row(in.Advantages), row(in.Mask)
	prox, ref, tw := row(in.ProxLogp), row(in.RefLogp), row(in.TokenWeights)
	grad := j.grad[b*T+from : b*T+to]
	clamp, klClamp := j.cfg.clamps()
	beta := j.cfg.KLCoef
	k3 := ref != nil && j.cfg.KLEstimator == K3
	clip := j.cfg.clipper()
	est := j.cfg.KLEstimator
	capAt, capTo := j.behaveCap()
	var ratio, behave, negKL [block]float64
	var dead [block]bool
	for start := 0; start < len(lp); start += block {
		n := min(block, len(lp)-start)
		lp, old, adv, mask, grad := lp[start:start+n], old[start:start+n], adv[start:start+n], mask[start:start+n], grad[start:start+n]
		// Pass 1: log-ratios, clamped; a float64 sum of a token's inputs is
		// finite exactly when each input is, so one test per token checks
		// them all.
		for i := range n {
			if mask[i] == 0 {
				ratio[i], negKL[i], behave[i] = 0, 0, 0
				continue
			}
			l, base := float64(lp[i]), float64(old[i])
			check := l + base + float64(adv[i])
			if prox != nil {
				p := float64(prox[i+start])
				check += p
				behave[i] = p - base
				base = p
			}
			if ref != nil {
				r := float64(ref[i+start])
				check += r
				negKL[i] = r - l
			}
			if tw != nil {
				w := float64(tw[i+start])
				check += w
				if w < 0 {
					return badWeight, from + start + i
				}
			}
			if check-check != 0 {
				return badInput, from + start + i
			}
			d := l - base
			s.negDelta -= d
			dead[i] = false
			if d > clamp || d < -clamp {
				d = math.Copysign(clamp, d)
				dead[i] = true
			}
			ratio[i] = d
		}
		// Pass 2: the exponentials.
		j.expSlice(ratio[:n], ratio[:n])
		if k3 {
			j.expSlice(negKL[:n], negKL[:n])
		}
		if prox != nil {
			j.expSlice(behave[:n], behave[:n])
		}
		// Pass 3: losses and gradients.
		for i := range n {
			if mask[i] == 0 {
				grad[i] = 0
				continue
			}
			a, r := float64(adv[i]), ratio[i]
			s.ratio += r
			loss, g, c := clip.surrogate(r, a)
			s.clips[c]++
			if dead[i] {
				g = 0 // torch's clamp passes no gradient where it binds
			}
			w := 1.0
			if prox != nil {
				var hit bool
				if w, hit = capWeight(behave[i], capAt, capTo); hit {
					s.capped++
				}
				s.behave += w
				s.behaveMax = max(s.behaveMax, w)
			}
			if tw != nil {
				w *= float64(tw[i+start])
			}
			s.policy += loss * w
			dl := -a * r * g * w
			if ref != nil {
				// The KL estimators, inline: a call here would force
				// every live register of the loop to the stack.
				x := float64(lp[i]) - float64(ref[i+start])
				var k, dk float64
				switch est {
				case K1:
					k, dk = x, 1
				case K2:
					k, dk = 0.5*x*x, x
				default:
					e := negKL[i]
					k, dk = e+x-1, 1-e
					if k > klClamp {
						k, dk = klClamp, 0
					}
				}
				s.kl += k
				dl += beta * dk
			}
			// + 0 turns the −0 of a clipped token into +0, as the
			// assembly produces it.
			gv := F(coef*dl + 0)
			if gv-gv != 0 {
				return badOverflow, from + start + i
			}
			grad[i] = gv
		}
	}
	return badNone, 0
}

// sequenceRow is the GSPO row: one ratio s = exp(mean_t Δ_t) for the whole
// sequence, clipped per token's advantage, with dLoss/dlogp_t =
// (Σ_u coef·w_u·∂ℓ_u/∂s)·s/|y| + coef·β·∂kl_t, the derivative of
// exp(mean Δ) reaching every token of the sequence equally.
func (j *policyJob[F]) sequenceRow(b int) {
	acc := &j.rows[b]
	in := &j.in
	n := j.lengths[b]
	grad := j.grad[b*in.Logp.T : (b+1)*in.Logp.T]
	if n == 0 {
		clear(grad)
		return
	}
	coef := j.coef[b]
	lp, old, adv, mask := in.Logp.Row(b), in.OldLogp.Row(b), in.Advantages.Row(b), in.Mask.Row(b)
	var prox, ref, tw []F
	if !in.ProxLogp.IsZero() {
		prox = in.ProxLogp.Row(b)
	}
	if !in.RefLogp.IsZero() {
		ref = in.RefLogp.Row(b)
	}
	if !in.TokenWeights.IsZero() {
		tw = in.TokenWeights.Row(b)
	}
	// Pass 1: validate and take the mean log-ratio.
	var sumDelta float64
	for t := range lp {
		if mask[t] == 0 {
			continue
		}
		l, a, base := float64(lp[t]), float64(adv[t]), float64(old[t])
		check := l + a + base
		if prox != nil {
			check += float64(prox[t])
			base = float64(prox[t])
		}
		if tw != nil {
			check += float64(tw[t])
			if tw[t] < 0 {
				acc.bad, acc.badCol = badWeight, t
				return
			}
		}
		if ref != nil {
			check += float64(ref[t])
		}
		if check-check != 0 {
			acc.bad, acc.badCol = badInput, t
			return
		}
		sumDelta += l - base
	}
	md := sumDelta / float64(n)
	live := 1.0
	if c := j.cfg.LogRatioClamp; c > 0 && (md > c || md < -c) {
		md = math.Copysign(c, md)
		live = 0
	}
	s := j.exp(md)
	acc.negDelta = -sumDelta
	acc.ratio = s * float64(n)
	// Pass 2: per-token losses; the KL part of the gradient goes to grad
	// now, the sequence part once its sum is known.
	beta := j.cfg.KLCoef
	clip := j.cfg.clipper()
	var clips [4]int
	var sumPolicy, sumKL, dLds float64
	for t := range lp {
		if mask[t] == 0 {
			grad[t] = 0
			continue
		}
		a := float64(adv[t])
		w := 1.0
		if prox != nil {
			var capped bool
			w, capped = j.behaveWeight(float64(prox[t]) - float64(old[t]))
			if capped {
				acc.capped++
			}
			acc.behave += w
			acc.behaveMax = max(acc.behaveMax, w)
		}
		if tw != nil {
			w *= float64(tw[t])
		}
		loss, g, c := clip.surrogate(s, a)
		clips[c]++
		sumPolicy += loss * w
		dLds -= a * g * w
		var dk float64
		if ref != nil {
			var k float64
			k, dk = j.kl(float64(lp[t]) - float64(ref[t]))
			sumKL += k
		}
		grad[t] = F(coef * beta * dk)
	}
	seq := coef * dLds * s * live / float64(n)
	for t := range lp {
		if mask[t] == 0 {
			continue
		}
		gv := grad[t] + F(seq) + 0
		if gv-gv != 0 {
			acc.bad, acc.badCol = badOverflow, t
			return
		}
		grad[t] = gv
	}
	acc.policy, acc.kl = sumPolicy, sumKL
	acc.clipLow, acc.clipHigh, acc.dual = clips[clipLow], clips[clipHigh], clips[clipDual]
}

func (j *policyJob[F]) combine(total int) (Result, error) {
	var res Result
	var ratio, negDelta, kl, behave float64
	var clipHigh, clipLow, dual, capped int
	res.MaxBehaveWeight = 1
	for b := range j.rows {
		acc := &j.rows[b]
		if acc.bad != badNone {
			return Result{}, fmt.Errorf("ppo: %w", j.rowError(b, acc))
		}
		if j.lengths[b] == 0 {
			continue
		}
		res.Sequences++
		res.PolicyLoss += j.coef[b] * acc.policy
		res.KLLoss += j.coef[b] * acc.kl
		kl += acc.kl
		ratio += acc.ratio
		negDelta += acc.negDelta
		behave += acc.behave
		res.MaxBehaveWeight = max(res.MaxBehaveWeight, acc.behaveMax)
		clipHigh += acc.clipHigh
		clipLow += acc.clipLow
		dual += acc.dual
		capped += acc.capped
	}
	res.KLLoss *= j.cfg.KLCoef
	res.Loss = res.PolicyLoss + res.KLLoss
	if math.IsInf(res.Loss, 0) || math.IsNaN(res.Loss) {
		return Result{}, fmt.Errorf("ppo: %w", tensor.Errorf(tensor.ErrRange, "loss", nil,
			"%v: the inputs overflow float64 (check ref_logp and the advantages, or set Config.KLClamp)", res.Loss))
	}
	res.Tokens = total
	res.MeanBehaveWeight = 1
	if total > 0 {
		n := float64(total)
		res.ClipFracHigh = float64(clipHigh) / n
		res.ClipFracLow = float64(clipLow) / n
		res.DualClipFrac = float64(dual) / n
		res.MeanRatio = ratio / n
		res.ApproxKL = negDelta / n
		if !j.in.RefLogp.IsZero() {
			res.KL = kl / n
		}
		if !j.in.ProxLogp.IsZero() {
			res.MeanBehaveWeight = behave / n
			res.CappedFrac = float64(capped) / n
		}
	}
	return res, nil
}

// rowError turns a row's early stop into an error naming the argument and
// position.
func (j *policyJob[F]) rowError(b int, acc *rowAcc) error {
	t := acc.badCol
	switch acc.bad {
	case badWeight:
		return tensor.Errorf(tensor.ErrRange, "token_weights", tensor.At(b, t), "%v is negative", float64(j.in.TokenWeights.At(b, t)))
	case badOverflow:
		return tensor.Errorf(tensor.ErrRange, "grad", tensor.At(b, t),
			"overflows the storage type (check ref_logp and advantages there, or set Config.KLClamp)")
	}
	in := &j.in
	return nonFiniteAt(b, t, named[F]{"logp", in.Logp}, named[F]{"old_logp", in.OldLogp}, named[F]{"advantages", in.Advantages},
		named[F]{"prox_logp", in.ProxLogp}, named[F]{"ref_logp", in.RefLogp}, named[F]{"token_weights", in.TokenWeights})
}
