package grpo

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// The estimators beyond GRPO and RLOO, under verl's adv_estimator names
// (docs/spec.md#group-advantages). Those that need more than the rewards
// take it through AdvantagesWith's Inputs.
const (
	// ReinforcePlusPlus whitens the rewards over the batch, without a
	// group baseline (verl "reinforce_plus_plus").
	ReinforcePlusPlus Estimator = RLOO + 1 + iota
	// ReinforcePlusPlusBaseline subtracts the group mean, then whitens over
	// the batch (verl "reinforce_plus_plus_baseline").
	ReinforcePlusPlusBaseline
	// ReMax subtracts the reward of the greedy response to the same prompt,
	// Inputs.Baseline (verl "remax").
	ReMax
	// OPO subtracts the length-weighted group mean, with Inputs.Lengths
	// (verl "opo").
	OPO
	// GPG subtracts the group mean and rescales by the batch's share of
	// informative responses (verl "gpg").
	GPG
	// PassK gives each response its unbiased leave-one-out pass@k (max@k)
	// advantage, k = Config.K (verl "grpo_passk" when K is the group size).
	PassK
	numEstimators
)

// Singleton selects the advantage of a group with a single (scored) member.
type Singleton int

const (
	// SingletonZero gives it 0: with no other response to compare with,
	// it carries no group-relative signal. rlpost's default.
	SingletonZero Singleton = iota
	// SingletonReward gives it its reward as if the group's mean were 0
	// and its spread 1, as verl does: R/(1 + ε) under ScaleGroup, R under
	// ScaleNone, R/(σ_batch + ε) under ScaleBatch.
	SingletonReward
)

// GPGAlpha selects GPG's correction factor α.
type GPGAlpha int

const (
	// GPGValid is the paper's α = B/(B − M), M the responses whose
	// advantage vanishes (their group's rewards are all equal, or it has
	// one member under SingletonZero). The default.
	GPGValid GPGAlpha = iota
	// GPGNonzero is verl's α = B/max(#{R_i ≠ 0}, 1), which counts the
	// responses with a nonzero reward instead.
	GPGNonzero
)

// whitenEps is added to the variance before the square root when the
// REINFORCE++ estimators whiten, as verl's masked_whiten (and gae's
// whitening) does.
const whitenEps = 1e-8

// Inputs are what some estimators need beside the rewards, one entry per
// reward. Nil fields are absent.
type Inputs[F tensor.Float] struct {
	// Baseline is the reward of the greedy response to each response's
	// prompt (ReMax; required there, rejected elsewhere).
	Baseline []F
	// Lengths are the response lengths in tokens, each ≥ 1: OPO's
	// weights (required), and the REINFORCE++ estimators' token weights
	// (optional: with them the whitening runs over tokens, as verl's does).
	Lengths []int
	// Scored marks the rewards that exist. An unscored reward (the
	// verifier timed out, the judge failed) is not read: it enters no
	// mean, spread or count, its advantage is 0, and Stats.Unscored
	// counts it. Nil: every reward is scored.
	Scored []bool
}

func (c Config) validateMore() error {
	switch {
	case c.Singleton != SingletonZero && c.Singleton != SingletonReward:
		return tensor.Errorf(tensor.ErrRange, "Config.Singleton", nil, "%d is not a Singleton", int(c.Singleton))
	case c.K < 0 || c.K == 1:
		return tensor.Errorf(tensor.ErrRange, "Config.K", nil, "%d, want 0 (the group size) or ≥ 2", c.K)
	case c.K != 0 && c.Estimator != PassK:
		return tensor.Errorf(tensor.ErrRange, "Config.K", nil, "%d is read by PassK only", c.K)
	case c.GPGAlpha != GPGValid && c.GPGAlpha != GPGNonzero:
		return tensor.Errorf(tensor.ErrRange, "Config.GPGAlpha", nil, "%d is not a GPGAlpha", int(c.GPGAlpha))
	case !(c.WhitenMeanEps >= 0) || math.IsInf(c.WhitenMeanEps, 1):
		return tensor.Errorf(tensor.ErrRange, "Config.WhitenMeanEps", nil, "%v, want a finite number ≥ 0", c.WhitenMeanEps)
	}
	return nil
}

// general reports whether c needs AdvantagesWith's path rather than the
// parallel GRPO/RLOO one.
func (c Config) general() bool {
	return c.Estimator > RLOO || c.Singleton != SingletonZero
}

// AdvantagesWith is Advantages for every estimator, with the inputs some of
// them need and an optional mask of scored rewards. dst may be rewards
// itself. It allocates nothing in steady state.
func AdvantagesWith[F tensor.Float](dst, rewards []F, g Groups, cfg Config, in Inputs[F]) (Stats, error) {
	if err := cfg.Validate(); err != nil {
		return Stats{}, fmt.Errorf("grpo: %w", err)
	}
	if !cfg.general() && in.Scored == nil && in.Baseline == nil && in.Lengths == nil {
		return Advantages(dst, rewards, g, cfg)
	}
	st, err := general(dst, rewards, g, cfg, in)
	if err != nil {
		return Stats{}, fmt.Errorf("grpo: %w", err)
	}
	return st, nil
}

// general validates the inputs, then runs the estimator over the groups in
// order.
func general[F tensor.Float](dst, rewards []F, g Groups, cfg Config, in Inputs[F]) (Stats, error) {
	n := len(rewards)
	if n == 0 {
		return Stats{}, tensor.Errorf(tensor.ErrEmpty, "rewards", nil, "no rewards")
	}
	if len(dst) != n {
		return Stats{}, tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d", len(dst), n)
	}
	groups, err := g.count(n)
	if err != nil {
		return Stats{}, err
	}
	if err := checkInputs(rewards, cfg, in); err != nil {
		return Stats{}, err
	}
	e := parallel.Get[estimate[F]](estimates)
	defer putEstimate(e)
	*e = estimate[F]{dst: dst, r: rewards, g: g, cfg: cfg, in: in, groups: groups, status: e.status}
	return e.run()
}

// checkInputs reports the first input that is missing, misshapen, not
// finite where scored, or not read by the estimator.
func checkInputs[F tensor.Float](rewards []F, cfg Config, in Inputs[F]) error {
	n := len(rewards)
	if in.Scored != nil && len(in.Scored) != n {
		return tensor.Errorf(tensor.ErrShape, "Inputs.Scored", nil, "length %d, want %d", len(in.Scored), n)
	}
	scored := func(i int) bool { return in.Scored == nil || in.Scored[i] }
	switch {
	case cfg.Estimator == ReMax && in.Baseline == nil:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Baseline", nil, "ReMax needs the greedy responses' rewards")
	case cfg.Estimator != ReMax && in.Baseline != nil:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Baseline", nil, "is read by ReMax only")
	case cfg.Estimator == OPO && in.Lengths == nil:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Lengths", nil, "OPO needs the response lengths")
	case in.Lengths != nil && cfg.Estimator != OPO && cfg.Estimator != ReinforcePlusPlus && cfg.Estimator != ReinforcePlusPlusBaseline:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Lengths", nil, "are read by OPO and the REINFORCE++ estimators only")
	case in.Baseline != nil && len(in.Baseline) != n:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Baseline", nil, "length %d, want %d", len(in.Baseline), n)
	case in.Lengths != nil && len(in.Lengths) != n:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Lengths", nil, "length %d, want %d", len(in.Lengths), n)
	}
	for i, r := range rewards {
		if !scored(i) {
			continue
		}
		if !tensor.IsFinite(r) {
			return tensor.Errorf(tensor.ErrNonFinite, "rewards", tensor.At(i), "%v (mark a missing reward in Inputs.Scored)", float64(r))
		}
		if in.Baseline != nil && !tensor.IsFinite(in.Baseline[i]) {
			return tensor.Errorf(tensor.ErrNonFinite, "Inputs.Baseline", tensor.At(i), "%v", float64(in.Baseline[i]))
		}
		if in.Lengths != nil && in.Lengths[i] < 1 {
			return tensor.Errorf(tensor.ErrRange, "Inputs.Lengths", tensor.At(i), "%d, want ≥ 1", in.Lengths[i])
		}
	}
	return nil
}

// estimate is one AdvantagesWith call.
type estimate[F tensor.Float] struct {
	dst, r []F
	g      Groups
	cfg    Config
	in     Inputs[F]
	groups int
	st     Stats

	batchStd float64 // ScaleBatch's σ over the scored rewards
	alpha    float64 // GPG's α

	// The groups run on the row engine, one group per row; each group's
	// outcome goes to its own status byte, counted afterwards in order.
	status   []uint8
	mu       sync.Mutex
	badGroup int   // the first group (in order) whose advantages overflow
	err      error // its error
}

// estimates recycles the state of AdvantagesWith calls, one free list per
// storage type.
var estimates = parallel.Jobs{parallel.NewFree[estimate[float32]](4), parallel.NewFree[estimate[float64]](4)}

func putEstimate[F tensor.Float](e *estimate[F]) {
	status := e.status
	*e = estimate[F]{status: status}
	parallel.Put(estimates, e)
}

// scratch keeps PassK's sorted groups of more than passKStack members for
// reuse across calls (a free list: unlike a sync.Pool, a collection does
// not empty it); smaller groups sort on the stack.
var scratch = parallel.NewFree[[]float64](8)

// Run computes group row; the row engine calls it.
func (e *estimate[F]) Run(row int) {
	if err := e.group(row); err != nil {
		e.mu.Lock()
		if e.err == nil || row < e.badGroup {
			e.badGroup, e.err = row, err
		}
		e.mu.Unlock()
	}
}

func (e *estimate[F]) scored(i int) bool { return e.in.Scored == nil || e.in.Scored[i] }

// at returns the index of member m of a group given by members.
func at(lo int, idx []int, m int) int {
	if idx != nil {
		return idx[m]
	}
	return lo + m
}

// groupMoments returns the number of scored members of group k, their mean
// and standard deviation (cfg.Std; 0 for fewer than two), and whether
// their rewards are all equal.
func (e *estimate[F]) groupMoments(k int) (m int, mean, std float64, equal bool) {
	lo, hi, idx := e.g.members(k)
	size := hi - lo
	if idx != nil {
		size = len(idx)
	}
	var sum float64
	var first F
	equal = true
	for t := range size {
		i := at(lo, idx, t)
		if !e.scored(i) {
			continue
		}
		if m == 0 {
			first = e.r[i]
		}
		equal = equal && e.r[i] == first
		sum += float64(e.r[i])
		m++
	}
	if m == 0 {
		return 0, 0, 0, true
	}
	mean = sum / float64(m)
	var ss float64
	for t := range size {
		if i := at(lo, idx, t); e.scored(i) {
			d := float64(e.r[i]) - mean
			ss += d * d
		}
	}
	div := float64(m)
	if e.cfg.Std == Unbiased {
		div--
	}
	if div > 0 && !equal {
		std = math.Sqrt(ss / div)
	}
	return m, mean, std, equal
}

func (e *estimate[F]) run() (Stats, error) {
	n := len(e.r)
	var sum float64
	nScored := 0
	for i, r := range e.r {
		if e.scored(i) {
			sum += float64(r)
			nScored++
		}
	}
	e.st = Stats{Groups: e.groups, Unscored: n - nScored}
	if nScored > 0 {
		e.st.MeanReward = sum / float64(nScored)
		var ss float64
		for i, r := range e.r {
			if e.scored(i) {
				d := float64(r) - e.st.MeanReward
				ss += d * d
			}
		}
		e.st.StdReward = math.Sqrt(ss / float64(nScored))
		if math.IsInf(e.st.MeanReward, 0) || math.IsInf(ss, 0) {
			return Stats{}, tensor.Errorf(tensor.ErrRange, "rewards", nil, "their sum overflows float64")
		}
		div := float64(nScored)
		if e.cfg.Std == Unbiased {
			div--
		}
		if div > 0 {
			e.batchStd = math.Sqrt(ss / div)
		}
	}
	if e.cfg.Estimator == GPG {
		e.alpha = e.gpgAlpha(nScored)
	}
	e.status = slices.Grow(e.status[:0], e.groups)[:e.groups]
	parallel.Rows(e, e.groups, max(n/max(e.groups, 1), 1))
	if e.err != nil {
		return Stats{}, e.err
	}
	for _, s := range e.status {
		switch s {
		case groupSingleton:
			e.st.Singletons++
		case groupVanished:
			e.st.Vanishing++
		}
	}
	if e.groups > 0 {
		e.st.VanishingFrac = float64(e.st.Vanishing) / float64(e.groups)
	}
	if e.cfg.Estimator == ReinforcePlusPlus || e.cfg.Estimator == ReinforcePlusPlusBaseline {
		if err := e.whiten(); err != nil {
			return Stats{}, err
		}
	}
	return e.st, nil
}

// group writes the advantages of group k (before any batch whitening) and
// its status. Groups touch disjoint entries of dst, so they run at once.
func (e *estimate[F]) group(k int) error {
	lo, hi, idx := e.g.members(k)
	size := hi - lo
	if idx != nil {
		size = len(idx)
	}
	m, mean, std, equal := e.groupMoments(k)
	switch {
	case m == 1:
		e.status[k] = groupSingleton
	case m > 1 && equal:
		e.status[k] = groupVanished
	default:
		e.status[k] = groupOK
	}
	cfg := e.cfg
	if cfg.Estimator == PassK && m > 1 && !equal {
		return e.passK(lo, idx, size, m, std)
	}
	var base float64 // OPO's baseline
	if cfg.Estimator == OPO && m > 1 && !equal {
		base = e.opoBaseline(lo, idx, size)
	}
	for t := range size {
		i := at(lo, idx, t)
		if !e.scored(i) {
			e.dst[i] = 0
			continue
		}
		r := float64(e.r[i])
		var a float64
		switch cfg.Estimator {
		case ReinforcePlusPlus:
			a = r
		case ReMax:
			a = r - float64(e.in.Baseline[i])
		default:
			a = e.centred(r, m, mean, std, base, equal)
		}
		e.dst[i] = F(a)
		if !tensor.IsFinite(e.dst[i]) {
			return overflow(i, a, cfg)
		}
	}
	return nil
}

// centred is the advantage of a member with reward r of a group-baseline
// estimator, in a group of m scored members; base is OPO's baseline.
func (e *estimate[F]) centred(r float64, m int, mean, std, base float64, equal bool) float64 {
	cfg := e.cfg
	if m == 1 {
		if cfg.Singleton == SingletonZero || cfg.Estimator == PassK {
			return 0
		}
		switch cfg.Estimator {
		case GRPO, RLOO:
			c := cfg
			c.Estimator = GRPO
			return r * scaleFor(1, 1, e.batchStd, c)
		case GPG:
			return e.alpha * r
		}
		return r // ReinforcePlusPlusBaseline, OPO: baseline 0
	}
	if equal {
		return 0 // exactly, not the rounding residue of R − mean
	}
	switch cfg.Estimator {
	case GRPO, RLOO:
		return (r - mean) * scaleFor(m, std, e.batchStd, cfg)
	case GPG:
		return e.alpha * (r - mean)
	case OPO:
		return r - base
	}
	return r - mean // ReinforcePlusPlusBaseline
}

// opoBaseline returns OPO's Σ l_j R_j / Σ l_j over the scored members of
// a group.
func (e *estimate[F]) opoBaseline(lo int, idx []int, size int) float64 {
	var num, den float64
	for t := range size {
		if j := at(lo, idx, t); e.scored(j) {
			l := float64(e.in.Lengths[j])
			num += l * float64(e.r[j])
			den += l
		}
	}
	return num / den
}

// gpgAlpha returns GPG's α over the nScored scored rewards.
func (e *estimate[F]) gpgAlpha(nScored int) float64 {
	if e.cfg.GPGAlpha == GPGNonzero {
		nonzero := 0
		for i, r := range e.r {
			if e.scored(i) && r != 0 {
				nonzero++
			}
		}
		return float64(nScored) / float64(max(nonzero, 1))
	}
	invalid := 0
	for k := range e.groups {
		m, _, _, equal := e.groupMoments(k)
		if (m == 1 && e.cfg.Singleton == SingletonZero) || (m > 1 && equal) {
			invalid += m
		}
	}
	if invalid == nScored {
		return 1 // every advantage is 0 whatever α is
	}
	return float64(nScored) / float64(nScored-invalid)
}

// whiten turns the centred values in dst into (x − mean)/sqrt(var + 1e-8)
// over the members that take part: the scored ones, less the singletons
// under SingletonZero for ReinforcePlusPlusBaseline. With Inputs.Lengths
// each member weighs its length (the tokens verl whitens over).
func (e *estimate[F]) whiten() error {
	var wsum, sum float64
	for k := range e.groups {
		lo, idx, size, ok := e.whitened(k)
		if !ok {
			continue
		}
		for t := range size {
			if i := at(lo, idx, t); e.scored(i) {
				w := e.weight(i)
				wsum += w
				sum += w * float64(e.dst[i])
			}
		}
	}
	if wsum == 0 {
		return nil
	}
	// verl's masked_mean divides by the count + WhitenMeanEps.
	mean := sum / (wsum + e.cfg.WhitenMeanEps)
	var ss float64
	for k := range e.groups {
		lo, idx, size, ok := e.whitened(k)
		if !ok {
			continue
		}
		for t := range size {
			if i := at(lo, idx, t); e.scored(i) {
				d := float64(e.dst[i]) - mean
				ss += e.weight(i) * d * d
			}
		}
	}
	div := wsum
	if e.cfg.Std == Unbiased {
		div--
	}
	variance := 0.0
	if div > 0 {
		variance = ss / div
	}
	if eps := e.cfg.WhitenMeanEps; eps > 0 {
		variance *= wsum / (wsum + eps) // masked_mean of the squares, then Bessel's factor
	}
	if math.IsInf(variance, 0) {
		return tensor.Errorf(tensor.ErrRange, "rewards", nil, "the variance of the advantages overflows float64; whitening is undefined")
	}
	scale := 1 / math.Sqrt(variance+whitenEps)
	for k := range e.groups {
		lo, idx, size, ok := e.whitened(k)
		if !ok {
			continue
		}
		for t := range size {
			if i := at(lo, idx, t); e.scored(i) {
				a := (float64(e.dst[i]) - mean) * scale
				e.dst[i] = F(a)
				if !tensor.IsFinite(e.dst[i]) {
					return overflow(i, a, e.cfg)
				}
			}
		}
	}
	return nil
}

// whitened returns the members of group k and whether whitening covers
// them: not a singleton of ReinforcePlusPlusBaseline under SingletonZero.
func (e *estimate[F]) whitened(k int) (lo int, idx []int, size int, ok bool) {
	lo, hi, idx := e.g.members(k)
	size = hi - lo
	if idx != nil {
		size = len(idx)
	}
	if e.cfg.Estimator != ReinforcePlusPlusBaseline || e.cfg.Singleton != SingletonZero {
		return lo, idx, size, true
	}
	return lo, idx, size, e.status[k] != groupSingleton // one scored member
}

// weight is member i's weight in the whitening: its length, or 1.
func (e *estimate[F]) weight(i int) float64 {
	if e.in.Lengths != nil {
		return float64(e.in.Lengths[i])
	}
	return 1
}
