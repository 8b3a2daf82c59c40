package grpo

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/internal/stat"
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

// general checks the inputs' shapes, then runs the estimator over the
// groups on the row engine (see estimate.run).
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
	if err := checkShapes(n, cfg, in); err != nil {
		return Stats{}, err
	}
	e := parallel.Get[estimate[F]](estimates)
	defer putEstimate(e)
	e.dst, e.r, e.g, e.cfg, e.in, e.groups = dst, rewards, g, cfg, in, groups
	return e.run()
}

// checkShapes reports the first input that is missing, misshapen or not
// read by the estimator. Their values are checked group by group, on the
// row engine (estimate.checkSpan).
func checkShapes[F tensor.Float](n int, cfg Config, in Inputs[F]) error {
	switch {
	case in.Scored != nil && len(in.Scored) != n:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Scored", nil, "length %d, want %d", len(in.Scored), n)
	case cfg.Estimator == ReMax && in.Baseline == nil:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Baseline", nil, "ReMax needs the greedy responses' rewards")
	case cfg.Estimator != ReMax && in.Baseline != nil:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Baseline", nil, "is read by ReMax only")
	case cfg.Estimator == OPO && in.Lengths == nil:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Lengths", nil, "OPO needs the response lengths")
	case in.Lengths != nil && cfg.Estimator != OPO && !cfg.whitens():
		return tensor.Errorf(tensor.ErrShape, "Inputs.Lengths", nil, "are read by OPO and the REINFORCE++ estimators only")
	case in.Baseline != nil && len(in.Baseline) != n:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Baseline", nil, "length %d, want %d", len(in.Baseline), n)
	case in.Lengths != nil && len(in.Lengths) != n:
		return tensor.Errorf(tensor.ErrShape, "Inputs.Lengths", nil, "length %d, want %d", len(in.Lengths), n)
	}
	return nil
}

// whitens reports whether the estimator whitens over the batch.
func (c Config) whitens() bool {
	return c.Estimator == ReinforcePlusPlus || c.Estimator == ReinforcePlusPlusBaseline
}

// needsBatch reports whether the groups' advantages need a batch statistic
// (σ_B or GPG's α) before they can be written.
func (c Config) needsBatch() bool {
	if c.Estimator == GPG {
		return true
	}
	return c.Scale == ScaleBatch && (c.Estimator == GRPO || c.Estimator == RLOO || c.Estimator == PassK)
}

// The phases of an estimate: each is one run of the groups on the row
// engine, perGroupRow groups to a row.
const (
	phaseMoments = iota // check the inputs, take the groups' moments
	phaseGroups         // the same, and write the advantages
	phaseWhiten         // whiten the advantages over the batch
)

// estimate is one AdvantagesWith call. Its batch statistics (Stats'
// moments, σ_B, GPG's α, the whitening's mean and variance) are formed from
// each group's summary: a row of perGroupRow groups combines its groups',
// and the caller combines the rows' in row order (stat.Combine), so they
// have the same bits at any GOMAXPROCS. A call that needs σ_B or α before
// any advantage runs the moments phase first; one that whitens runs a last
// phase that applies the whitening.
type estimate[F tensor.Float] struct {
	dst, r []F
	g      Groups
	cfg    Config
	in     Inputs[F]
	groups int
	phase  int
	// gathered is set once a phase has gathered the groups by id.
	gathered bool

	st       Stats
	batchStd float64 // ScaleBatch's σ over the scored rewards
	alpha    float64 // GPG's α
	// The whitening: x ↦ (x − whiteMean)·whiteScale, checked for
	// overflow member by member if whiteChecked.
	whiteMean, whiteScale float64
	whiteChecked          bool
	pr                    plainRule

	// Each group's outcome; each row's summaries of its scored rewards
	// and of its whitened advantages, and its counts for GPG's α: the
	// members whose advantage vanishes, and the nonzero rewards.
	status              []uint8
	batchRows, whiteRow []stat.Summary
	invalid, nonzero    []int
	rowKind             []uint8   // rowGeneral, rowPlain or rowFused
	means               []float64 // each group's mean, for rowFused rows

	// Groups by id are gathered into consecutive slots (Groups.order's
	// order) so that they run through the same loops as contiguous ones.
	gr, gd, gb []F
	gs         []bool
	gl         []int

	mu       sync.Mutex
	inputAt  int   // the first index (in index order) with a bad input
	inputErr error // its error
	badGroup int   // the first group (in group order) whose advantages fail
	err      error // its error
}

// estimates recycles the state of AdvantagesWith calls, one free list per
// storage type.
var estimates = parallel.Jobs{parallel.NewFree[estimate[float32]](4), parallel.NewFree[estimate[float64]](4)}

func putEstimate[F tensor.Float](e *estimate[F]) {
	*e = estimate[F]{status: e.status, batchRows: e.batchRows, whiteRow: e.whiteRow,
		invalid: e.invalid, nonzero: e.nonzero, rowKind: e.rowKind, means: e.means, gr: e.gr, gd: e.gd, gb: e.gb, gs: e.gs, gl: e.gl}
	parallel.Put(estimates, e)
}

// scratch keeps PassK's sorted groups of more than passKStack members for
// reuse across calls (a free list: unlike a sync.Pool, a collection does
// not empty it); smaller groups sort on the stack.
var scratch = parallel.NewFree[[]float64](8)

// span is one group's members in consecutive slots: of the caller's slices
// for contiguous groups, of the estimate's gathered copies for groups by
// id. Optional inputs are nil when absent.
type span[F tensor.Float] struct {
	r, d   []F
	scored []bool
	base   []F
	lens   []int
	lo     int   // the index of member 0 (contiguous groups)
	idx    []int // the indices of the members (groups by id), else nil
}

// index is the index in the batch of member t.
func (s *span[F]) index(t int) int {
	if s.idx != nil {
		return s.idx[t]
	}
	return s.lo + t
}

func (s *span[F]) isScored(t int) bool { return s.scored == nil || s.scored[t] }

// spans fills sp with the members of groups first … last−1. Groups by id
// are gathered into the estimate's slots first, unless gathered is set
// (an earlier phase did it). A group whose members are all scored runs
// the loops without a mask.
//
// It reports whether the groups are plain: contiguous, of two or more
// members, all scored, with no other inputs.
func (e *estimate[F]) spans(first, last int, sp *[perGroupRow]span[F], gathered bool) (plain bool) {
	if e.g.order == nil {
		size := e.g.size
		masked := e.in.Scored != nil && !allTrue(e.in.Scored[first*size:last*size])
		for k := first; k < last; k++ {
			lo, hi := k*size, (k+1)*size
			s := &sp[k-first]
			*s = span[F]{r: e.r[lo:hi:hi], d: e.dst[lo:hi:hi], lo: lo}
			if masked && !allTrue(e.in.Scored[lo:hi]) {
				s.scored = e.in.Scored[lo:hi:hi]
			}
			if e.in.Baseline != nil {
				s.base = e.in.Baseline[lo:hi:hi]
			}
			if e.in.Lengths != nil {
				s.lens = e.in.Lengths[lo:hi:hi]
			}
		}
		return !masked && size > 1 && e.in.Baseline == nil && e.in.Lengths == nil
	}
	for k := first; k < last; k++ {
		a, b := e.g.starts[k], e.g.starts[k+1]
		idx := e.g.order[a:b]
		s := &sp[k-first]
		*s = span[F]{r: e.gr[a:b:b], d: e.gd[a:b:b], idx: idx}
		if e.in.Scored != nil {
			s.scored = e.gs[a:b:b]
		}
		if e.in.Baseline != nil {
			s.base = e.gb[a:b:b]
		}
		if e.in.Lengths != nil {
			s.lens = e.gl[a:b:b]
		}
		if !gathered {
			for t, i := range idx {
				s.r[t] = e.r[i]
				if s.scored != nil {
					s.scored[t] = e.in.Scored[i]
				}
				if s.base != nil {
					s.base[t] = e.in.Baseline[i]
				}
				if s.lens != nil {
					s.lens[t] = e.in.Lengths[i]
				}
			}
		}
		if s.scored != nil && allTrue(s.scored) {
			s.scored = nil
		}
	}
	return false
}

// scatter writes back the advantages of a group by id.
func (e *estimate[F]) scatter(s *span[F]) {
	for t, i := range s.idx {
		e.dst[i] = s.d[t]
	}
}

// grow returns x with length n, reusing its array.
func grow[T any](x []T, n int) []T { return slices.Grow(x[:0], n)[:n] }

func (e *estimate[F]) run() (Stats, error) {
	n := len(e.r)
	rows := (e.groups + perGroupRow - 1) / perGroupRow
	e.status = grow(e.status, e.groups)
	e.batchRows, e.whiteRow = grow(e.batchRows, rows), grow(e.whiteRow, rows)
	e.invalid, e.nonzero = grow(e.invalid, rows), grow(e.nonzero, rows)
	e.rowKind = grow(e.rowKind, rows)
	if e.cfg.whitens() {
		e.means = grow(e.means, e.groups)
	}
	if e.g.order != nil {
		e.gr, e.gd = grow(e.gr, n), grow(e.gd, n)
		if e.in.Scored != nil {
			e.gs = grow(e.gs, n)
		}
		if e.in.Baseline != nil {
			e.gb = grow(e.gb, n)
		}
		if e.in.Lengths != nil {
			e.gl = grow(e.gl, n)
		}
	}
	width := max(n/rows, 1)
	batched := false
	if e.cfg.needsBatch() {
		e.setPlainRule() // α is not needed for the moments
		e.phase = phaseMoments
		parallel.Rows(e, rows, width)
		e.gathered = true
		if e.inputErr != nil {
			return Stats{}, e.inputErr
		}
		if err := e.batch(); err != nil {
			return Stats{}, err
		}
		batched = true
	}
	e.setPlainRule()
	e.phase = phaseGroups
	parallel.Rows(e, rows, width)
	e.gathered = true
	if e.inputErr != nil {
		return Stats{}, e.inputErr
	}
	if !batched {
		if err := e.batch(); err != nil {
			return Stats{}, err
		}
	}
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
	if !e.cfg.whitens() {
		return e.st, nil
	}
	white := stat.Combine(e.whiteRow)
	if white.W == 0 {
		return e.st, nil
	}
	div := white.W
	if e.cfg.Std == Unbiased {
		div--
	}
	variance := 0.0
	if div > 0 {
		variance = white.M2 / div
	}
	if math.IsInf(variance, 0) || math.IsNaN(variance) {
		return Stats{}, tensor.Errorf(tensor.ErrRange, "rewards", nil, "the variance of the advantages overflows float64; whitening is undefined")
	}
	e.whiteMean, e.whiteScale = white.Mean, 1/math.Sqrt(variance+whitenEps)
	// A whitened advantage is at most sqrt(W) in size (each member's
	// squared deviation is part of M2, each weight ≥ 1), and the rounding
	// of F adds at most 2⁻²³·|mean|·10⁴ (whitenEps bounds the scale):
	// far below F's largest value unless W is, so the whitening skips its
	// per-member check.
	e.whiteChecked = !(4*math.Sqrt(white.W)+1 < maxOf[F]()/4)
	e.phase = phaseWhiten
	parallel.Rows(e, rows, width)
	if e.err != nil {
		return Stats{}, e.err
	}
	return e.st, nil
}

// batch forms the batch statistics from the rows' sums: Stats' moments,
// σ_B and GPG's α.
func (e *estimate[F]) batch() error {
	b := stat.Combine(e.batchRows)
	nScored := int(b.W)
	e.st = Stats{Groups: e.groups, Unscored: len(e.r) - nScored}
	if nScored == 0 {
		return nil
	}
	if !isFinite(b.Mean) || !isFinite(b.M2) {
		return tensor.Errorf(tensor.ErrRange, "rewards", nil, "their sum overflows float64")
	}
	e.st.MeanReward, e.st.StdReward = b.Mean, math.Sqrt(b.M2/float64(nScored))
	div := float64(nScored)
	if e.cfg.Std == Unbiased {
		div--
	}
	if div > 0 {
		e.batchStd = math.Sqrt(b.M2 / div)
	}
	if e.cfg.Estimator == GPG {
		var invalid, nonzero int
		for r := range e.invalid {
			invalid += e.invalid[r]
			nonzero += e.nonzero[r]
		}
		switch {
		case e.cfg.GPGAlpha == GPGNonzero:
			e.alpha = float64(nScored) / float64(max(nonzero, 1))
		case invalid == nScored:
			e.alpha = 1 // every advantage is 0 whatever α is
		default:
			e.alpha = float64(nScored) / float64(nScored-invalid)
		}
	}
	return nil
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Run runs the current phase over the perGroupRow groups of row; the row
// engine calls it. Each pass over the members runs for every group of the
// row before the next pass starts: a group's sums are chains of dependent
// additions, and the groups' chains, independent, then overlap in the
// processor instead of each waiting on the last. Each group's arithmetic
// is unchanged by it.
func (e *estimate[F]) Run(row int) {
	first := row * perGroupRow
	last := min(first+perGroupRow, e.groups)
	nk := last - first
	size := e.g.size
	if e.phase == phaseWhiten && e.rowKind[row] != rowGeneral {
		// Every group of a plain row is whitened.
		var t int
		var err error
		if e.rowKind[row] == rowFused {
			t, err = e.whitenFused(first, last)
		} else {
			t, err = e.whitenFlat(first*size, last*size)
		}
		if err != nil {
			e.fail(t/size, err)
		}
		return
	}
	plain := e.phase != phaseWhiten && e.plainRow(first, last)
	if e.phase == phaseGroups {
		e.rowKind[row] = rowGeneral
		if plain {
			e.rowKind[row] = rowPlain
		}
	}
	if plain && e.pr.ok && nk%4 == 0 {
		if e.phase == phaseGroups && e.cfg.whitens() {
			e.rowKind[row] = rowFused
		}
		e.runPlain(row, first, last)
		return
	}
	// Plain rows need spans only where a group leaves the plain loops
	// (spanOf); the others' are laid out here.
	var sp [perGroupRow]span[F]
	if !plain {
		e.spans(first, last, &sp, e.gathered)
	}
	if e.phase == phaseWhiten {
		for q := range nk {
			if err := e.whiten(first+q, &sp[q]); err != nil {
				e.fail(first+q, err)
			}
			if sp[q].idx != nil {
				e.scatter(&sp[q])
			}
		}
		return
	}
	var gm [perGroupRow]groupStats
	q0 := 0
	if plain {
		// Four groups' moments in one loop (moments4), the GRPO path's.
		for ; q0+4 <= nk; q0 += 4 {
			lo := (first + q0) * size
			mo := moments4(e.r[lo:lo+4*size], size)
			for j := range 4 {
				gm[q0+j] = e.plainStats(size, mo.sum[j], mo.mean[j], mo.ss[j], !mo.differ[j])
			}
		}
	}
	for q := q0; q < nk; q++ {
		gm[q] = e.sumPass(e.spanOf(&sp, first, q))
	}
	for q := q0; q < nk; q++ {
		e.spreadPass(e.spanOf(&sp, first, q), &gm[q])
	}
	var batch [perGroupRow]stat.Summary
	invalid, nonzero := 0, 0
	for q := range nk {
		k, g := first+q, &gm[q]
		if g.suspect {
			if i, err := e.checkSpan(e.spanOf(&sp, first, q)); err != nil {
				e.mu.Lock()
				if e.inputErr == nil || i < e.inputAt {
					e.inputAt, e.inputErr = i, err
				}
				e.mu.Unlock()
			}
		}
		batch[q] = stat.Summary{W: float64(g.m), Mean: g.mean, M2: g.ss}
		switch {
		case g.m == 1:
			e.status[k] = groupSingleton
		case g.m > 1 && g.equal:
			e.status[k] = groupVanished
		default:
			e.status[k] = groupOK
		}
		if e.cfg.Estimator == GPG {
			if (g.m == 1 && e.cfg.Singleton == SingletonZero) || (g.m > 1 && g.equal) {
				invalid += g.m
			}
			s := e.spanOf(&sp, first, q)
			for t, v := range s.r {
				if v != 0 && s.isScored(t) {
					nonzero++
				}
			}
		}
	}
	e.batchRows[row] = stat.Combine(batch[:nk])
	e.invalid[row], e.nonzero[row] = invalid, nonzero
	if e.phase == phaseMoments {
		return
	}
	for q := range nk {
		var err error
		if plain {
			err = e.plainGroup(&sp, first, q, gm[q])
		} else {
			err = e.group(&sp[q], gm[q])
		}
		if err != nil {
			e.fail(first+q, err)
		}
	}
	if !e.cfg.whitens() {
		for q := range nk {
			if sp[q].idx != nil {
				e.scatter(&sp[q])
			}
		}
		return
	}
	var white [perGroupRow]stat.Summary
	for q := range nk {
		switch {
		case !e.whitened(first + q):
		case plain || sp[q].lens == nil:
			white[q] = e.whiteMoments(gm[q])
		default:
			white[q] = whiteSums(&sp[q])
			whiteSpread(&sp[q], &white[q])
		}
	}
	e.whiteRow[row] = stat.Combine(white[:nk])
}

// plainRule is rule for the groups of plain rows (m = size ≥ 2, every
// member scored, no other inputs), decided once per call (setPlainRule)
// so that runPlain spends little on each group.
type plainRule struct {
	ok        bool    // runPlain applies
	zeroEqual bool    // a group of equal rewards gets exact zeros
	passAll   bool    // an informative group goes to passAll
	shiftMean bool    // shift = the group's mean, else 0
	scaleFor  bool    // scale = scaleFor(size, std, σ_B, cfg), else scale
	scale     float64 // the fixed scale
}

// setPlainRule decides e.pr from the configuration (and α, known by now),
// as rule decides for a group of m = size ≥ 2 members.
func (e *estimate[F]) setPlainRule() {
	cfg := e.cfg
	pr := plainRule{ok: true, zeroEqual: true, shiftMean: true, scale: 1}
	switch cfg.Estimator {
	case GRPO, RLOO:
		pr.scaleFor = true
	case GPG:
		pr.scale = e.alpha
	case ReinforcePlusPlus:
		pr.zeroEqual, pr.shiftMean = false, false
	case PassK:
		pr.passAll = cfg.K == 0 || cfg.K == e.g.size
		pr.ok = pr.passAll
	case ReinforcePlusPlusBaseline:
	default: // ReMax and OPO read inputs, which plain rows do not have
		pr.ok = false
	}
	e.pr = pr
}

// runPlain runs the moments or groups phase over a plain row of a multiple
// of four groups: moments4 takes four groups' moments at a time, and each
// group follows e.pr. It writes what Run does.
func (e *estimate[F]) runPlain(row, first, last int) {
	size := e.g.size
	n := float64(size)
	div := n
	if e.cfg.Std == Unbiased {
		div--
	}
	pr := &e.pr
	gpg := e.cfg.Estimator == GPG
	var batch, white [perGroupRow]stat.Summary
	invalid, nonzero := 0, 0
	for q := 0; q < last-first; q += 4 {
		lo := (first + q) * size
		mo := moments4(e.r[lo:lo+4*size], size)
		for j := range 4 {
			k, glo := first+q+j, lo+j*size
			ghi := glo + size
			equal := !mo.differ[j]
			if !isFinite(mo.sum[j]) {
				e.checkPlain(glo, ghi)
			}
			batch[q+j] = stat.Summary{W: n, Mean: mo.mean[j], M2: mo.ss[j]}
			e.status[k] = groupOK
			if equal {
				e.status[k] = groupVanished
			}
			if gpg {
				if equal {
					invalid += size
				}
				for _, v := range e.r[glo:ghi] {
					nonzero += int(b2u(v != 0))
				}
			}
			if e.phase == phaseMoments {
				continue
			}
			gm := groupStats{m: size, sum: mo.sum[j], mean: mo.mean[j], ss: mo.ss[j], equal: equal}
			if e.cfg.whitens() {
				// Written once, whitened (whitenFused).
				e.means[k] = gm.mean
				white[q+j] = e.whiteMoments(gm)
				continue
			}
			if !equal {
				gm.std = math.Sqrt(gm.ss / div)
			}
			d, r := e.dst[glo:ghi:ghi], e.r[glo:ghi:ghi]
			var err error
			switch {
			case equal && pr.zeroEqual:
				clear(d)
			case pr.passAll:
				err = e.passAll(&span[F]{r: r, d: d, lo: glo}, gm.std)
			default:
				shift, scale := 0.0, pr.scale
				if pr.shiftMean {
					shift = gm.mean
				}
				if pr.scaleFor {
					scale = scaleFor(size, gm.std, e.batchStd, e.cfg)
				}
				if writeShifted(d, r, nil, shift, scale, !shiftBound[F](gm, shift, scale)) != 0 {
					err = e.firstOverflow(&span[F]{r: r, d: d, lo: glo}, shift, scale)
				}
			}
			if err != nil {
				e.fail(k, err)
			}
		}
	}
	nk := last - first
	e.batchRows[row] = stat.Combine(batch[:nk])
	e.whiteRow[row] = stat.Combine(white[:nk])
	e.invalid[row], e.nonzero[row] = invalid, nonzero
}

// checkPlain checks the inputs of the plain group rewards[lo:hi].
func (e *estimate[F]) checkPlain(lo, hi int) {
	s := span[F]{r: e.r[lo:hi:hi], d: e.dst[lo:hi:hi], lo: lo}
	if i, err := e.checkSpan(&s); err != nil {
		e.mu.Lock()
		if e.inputErr == nil || i < e.inputAt {
			e.inputAt, e.inputErr = i, err
		}
		e.mu.Unlock()
	}
}

// plainRow reports whether groups first … last−1 are plain: contiguous,
// of two or more members, all scored, with no other inputs.
func (e *estimate[F]) plainRow(first, last int) bool {
	size := e.g.size
	return e.g.order == nil && size > 1 && e.in.Baseline == nil && e.in.Lengths == nil &&
		(e.in.Scored == nil || allTrue(e.in.Scored[first*size:last*size]))
}

// plainGroup writes the advantages of group k of a plain row, straight
// from the caller's slices where its rule is a shift and a scale.
func (e *estimate[F]) plainGroup(sp *[perGroupRow]span[F], first, q int, gm groupStats) error {
	kind, shift, scale := e.rule(nil, gm)
	if kind != ruleShift {
		return e.group(e.spanOf(sp, first, q), gm)
	}
	lo, hi := (first+q)*e.g.size, (first+q+1)*e.g.size
	if writeShifted(e.dst[lo:hi:hi], e.r[lo:hi:hi], nil, shift, scale, !shiftBound[F](gm, shift, scale)) != 0 {
		return e.firstOverflow(e.spanOf(sp, first, q), shift, scale)
	}
	return nil
}

// spanOf returns the span of group first+q of a row, laying it out first
// in a plain row, whose groups have none until they need one.
func (e *estimate[F]) spanOf(sp *[perGroupRow]span[F], first, q int) *span[F] {
	if sp[q].r == nil {
		lo, hi := (first+q)*e.g.size, (first+q+1)*e.g.size
		sp[q] = span[F]{r: e.r[lo:hi:hi], d: e.dst[lo:hi:hi], lo: lo}
	}
	return &sp[q]
}

// fail records the error of group k, keeping the first in group order.
func (e *estimate[F]) fail(k int, err error) {
	e.mu.Lock()
	if e.err == nil || k < e.badGroup {
		e.badGroup, e.err = k, err
	}
	e.mu.Unlock()
}

// groupStats are the moments of a group's scored members.
type groupStats struct {
	m        int     // scored members
	sum      float64 // their sum, in member order
	mean, ss float64 // their mean and sum of squared deviations from it
	std      float64 // their standard deviation (Config.Std; 0 for fewer than two, or all equal)
	equal    bool    // all their rewards are equal (true with none)
	suspect  bool    // an input of a scored member may be out of its domain: checkSpan
}

// sumPass starts the moments of the scored members of s: their count and
// their sum in member order, whether they differ, and whether an input may
// be out of its domain (a non-finite reward shows as a non-finite sum; the
// baselines and lengths, where given, get their own look).
func (e *estimate[F]) sumPass(s *span[F]) groupStats {
	var sum float64
	var differ uint
	m := 0
	if s.scored == nil {
		m = len(s.r)
		if exact[F]() {
			for _, v := range s.r {
				sum += float64(v)
			}
		} else {
			first := s.r[0]
			for _, v := range s.r {
				sum += float64(v)
				differ += b2u(v != first)
			}
		}
	} else {
		sc := s.scored[:len(s.r)]
		var first F
		for t, v := range s.r {
			if sc[t] {
				if m == 0 {
					first = v
				}
				sum += float64(v)
				differ += b2u(v != first)
				m++
			}
		}
	}
	g := groupStats{m: m, sum: sum, equal: differ == 0, suspect: !isFinite(sum)}
	if s.base != nil {
		var b float64
		for t, v := range s.base {
			if s.isScored(t) {
				b += float64(v)
			}
		}
		g.suspect = g.suspect || !isFinite(b)
	}
	if s.lens != nil {
		for t, l := range s.lens {
			g.suspect = g.suspect || (l < 1 && s.isScored(t))
		}
	}
	if m > 0 {
		g.mean = sum / float64(m)
	}
	return g
}

// plainStats are the moments of a group of m scored members, all of them,
// with the given sum, mean and spread.
func (e *estimate[F]) plainStats(m int, sum, mean, ss float64, equal bool) groupStats {
	g := groupStats{m: m, sum: sum, mean: mean, ss: ss, equal: equal, suspect: !isFinite(sum)}
	div := float64(m)
	if e.cfg.Std == Unbiased {
		div--
	}
	if div > 0 && !equal {
		g.std = math.Sqrt(ss / div)
	}
	return g
}

// exact reports whether F is float32, whose groups need no separate test
// for equal members (see contiguousGroups4: ss ≠ 0 is "they differ").
func exact[F tensor.Float]() bool {
	var z F
	return unsafe.Sizeof(z) == 4
}

// spreadPass ends the moments that sumPass started: the squared deviations
// from the mean, in a second pass, and the standard deviation.
func (e *estimate[F]) spreadPass(s *span[F], g *groupStats) {
	if g.m == 0 {
		return
	}
	var ss float64
	if s.scored == nil {
		for _, v := range s.r {
			x := float64(v) - g.mean
			ss += x * x
		}
		if exact[F]() {
			g.equal = ss == 0
		}
	} else {
		sc := s.scored[:len(s.r)]
		for t, v := range s.r {
			if sc[t] {
				x := float64(v) - g.mean
				ss += x * x
			}
		}
	}
	g.ss = ss
	div := float64(g.m)
	if e.cfg.Std == Unbiased {
		div--
	}
	if div > 0 && !g.equal {
		g.std = math.Sqrt(ss / div)
	}
}

// checkSpan returns the first member of s, in index order, whose reward,
// baseline or length is out of its domain, and its error.
func (e *estimate[F]) checkSpan(s *span[F]) (int, error) {
	for t, r := range s.r {
		if !s.isScored(t) {
			continue
		}
		i := s.index(t)
		if !tensor.IsFinite(r) {
			return i, tensor.Errorf(tensor.ErrNonFinite, "rewards", tensor.At(i), "%v (mark a missing reward in Inputs.Scored)", float64(r))
		}
		if s.base != nil && !tensor.IsFinite(s.base[t]) {
			return i, tensor.Errorf(tensor.ErrNonFinite, "Inputs.Baseline", tensor.At(i), "%v", float64(s.base[t]))
		}
		if s.lens != nil && s.lens[t] < 1 {
			return i, tensor.Errorf(tensor.ErrRange, "Inputs.Lengths", tensor.At(i), "%d, want ≥ 1", s.lens[t])
		}
	}
	return 0, nil
}

// group writes the advantages of the members of s (before any batch
// whitening).
func (e *estimate[F]) group(s *span[F], gm groupStats) error {
	kind, shift, scale := e.rule(s, gm)
	switch kind {
	case rulePassK:
		return e.passK(s, gm.m, gm.std)
	case ruleZero:
		clear(s.d)
		return nil
	case ruleReMax:
		for t, v := range s.r {
			if !s.isScored(t) {
				s.d[t] = 0
				continue
			}
			a := float64(v) - float64(s.base[t])
			s.d[t] = F(a)
			if !tensor.IsFinite(s.d[t]) {
				return overflow(s.index(t), a, e.cfg)
			}
		}
		return nil
	}
	if writeShifted(s.d, s.r, s.scored, shift, scale, !shiftBound[F](gm, shift, scale)) != 0 {
		return e.firstOverflow(s, shift, scale)
	}
	return nil
}

// The kinds of rule a group's advantages follow.
const (
	ruleShift = iota // A = (R − shift)·scale
	ruleZero         // A = 0, exactly (not the rounding residue of R − mean)
	rulePassK        // passK
	ruleReMax        // A = R − Inputs.Baseline
)

// rule returns the rule of a group with moments gm under the estimator;
// s is read by OPO only (its baseline).
func (e *estimate[F]) rule(s *span[F], gm groupStats) (kind int, shift, scale float64) {
	cfg := e.cfg
	informative := gm.m > 1 && !gm.equal
	scale = 1
	switch {
	case cfg.Estimator == ReMax:
		kind = ruleReMax
	case cfg.Estimator == ReinforcePlusPlus:
		// A = R, whitened later.
	case gm.m == 1:
		switch {
		case cfg.Singleton == SingletonZero || cfg.Estimator == PassK:
			kind = ruleZero
		case cfg.Estimator == GRPO || cfg.Estimator == RLOO:
			c := cfg
			c.Estimator = GRPO
			scale = scaleFor(1, 1, e.batchStd, c)
		case cfg.Estimator == GPG:
			scale = e.alpha
		}
		// ReinforcePlusPlusBaseline, OPO: baseline 0, A = R.
	case !informative:
		kind = ruleZero
	case cfg.Estimator == PassK:
		kind = rulePassK
	case cfg.Estimator == GRPO || cfg.Estimator == RLOO:
		shift, scale = gm.mean, scaleFor(gm.m, gm.std, e.batchStd, cfg)
	case cfg.Estimator == GPG:
		shift, scale = gm.mean, e.alpha
	case cfg.Estimator == OPO:
		shift = e.opoBaseline(s)
	default: // ReinforcePlusPlusBaseline
		shift = gm.mean
	}
	return kind, shift, scale
}

// writeShifted writes (R − shift)·scale of the scored members of r into d
// and 0 for the others (scored nil: all are scored). With checked set it
// returns 0 if every advantage is finite in F (notFinite), so that the
// loop has one test after it instead of one per member; unset, the caller
// has bounded them (shiftBound).
func writeShifted[F tensor.Float](d, r []F, scored []bool, shift, scale float64, checked bool) (check uint64) {
	d = d[:len(r)]
	if scored == nil && !checked {
		for t, v := range r {
			d[t] = F((float64(v) - shift) * scale)
		}
		return 0
	}
	if scored == nil {
		for t, v := range r {
			a := F((float64(v) - shift) * scale)
			d[t] = a
			check |= notFinite(a)
		}
		return check
	}
	scored = scored[:len(r)]
	for t, v := range r {
		var a F
		if scored[t] {
			a = F((float64(v) - shift) * scale)
		}
		d[t] = a
		check |= notFinite(a)
	}
	return check
}

// shiftBound reports whether (R − shift)·scale is sure to be finite in F
// for every scored member of a group with moments gm: Σ (R − shift)² =
// ss + m·(mean − shift)² bounds each (R − shift)², and a factor 4 covers
// the rounding of the sums and of the product. A non-finite input fails
// the test (NaN compares false).
func shiftBound[F tensor.Float](gm groupStats, shift, scale float64) bool {
	c := gm.mean - shift
	return 4*math.Sqrt(gm.ss+float64(gm.m)*c*c)*math.Abs(scale) < maxOf[F]()
}

// maxOf is the largest finite F.
func maxOf[F tensor.Float]() float64 {
	if exact[F]() {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// firstOverflow returns the error of the first advantage of s that
// overflows F, recomputed unless dst is the rewards themselves.
func (e *estimate[F]) firstOverflow(s *span[F], shift, scale float64) error {
	same := tensor.Same(s.r, s.d)
	for t, a := range s.d {
		if s.isScored(t) && !tensor.IsFinite(a) {
			v := float64(a)
			if !same {
				v = (float64(s.r[t]) - shift) * scale
			}
			return overflow(s.index(t), v, e.cfg)
		}
	}
	return nil
}

// opoBaseline returns OPO's Σ l_j R_j / Σ l_j over the scored members.
func (e *estimate[F]) opoBaseline(s *span[F]) float64 {
	var num, den float64
	for t, v := range s.r {
		if s.isScored(t) {
			l := float64(s.lens[t])
			num += l * float64(v)
			den += l
		}
	}
	return num / den
}

// whitened reports whether the whitening covers group k: not a singleton
// of ReinforcePlusPlusBaseline under SingletonZero.
func (e *estimate[F]) whitened(k int) bool {
	return e.cfg.Estimator != ReinforcePlusPlusBaseline || e.cfg.Singleton != SingletonZero ||
		e.status[k] != groupSingleton
}

// whiteMoments is the summary of a group's advantages before whitening,
// unweighted, taken from its moments without a pass: under
// ReinforcePlusPlus they are the rewards themselves; under
// ReinforcePlusPlusBaseline the centred rewards R − mean, in float64 before
// they are stored as F, whose mean is (ΣR − m·mean)/m (0 but for the
// rounding of mean) and whose spread about it is the group's, or R for a
// singleton under SingletonReward, or exactly 0 in a group of equal
// rewards.
func (e *estimate[F]) whiteMoments(g groupStats) stat.Summary {
	w := float64(g.m)
	switch {
	case g.m == 0:
		return stat.Summary{}
	case e.cfg.Estimator == ReinforcePlusPlus || g.m == 1:
		return stat.Summary{W: w, Mean: g.mean, M2: g.ss}
	case g.equal:
		return stat.Summary{W: w}
	}
	return stat.Summary{W: w, Mean: (g.sum - w*g.mean) / w, M2: g.ss}
}

// whiteSums starts the summary of the advantages of s that the whitening
// covers, each weighing its length or 1 (the tokens verl whitens over):
// their weight and weighted mean.
func whiteSums[F tensor.Float](s *span[F]) stat.Summary {
	var w, sum float64
	d := s.d[:len(s.r)]
	switch {
	case s.lens != nil:
		for t, a := range d {
			if s.isScored(t) {
				l := float64(s.lens[t])
				w += l
				sum += l * float64(a)
			}
		}
	case s.scored == nil:
		for _, a := range d {
			sum += float64(a)
		}
		w = float64(len(d))
	default:
		sc := s.scored[:len(d)]
		for t, a := range d {
			if sc[t] {
				w++
				sum += float64(a)
			}
		}
	}
	if w == 0 {
		return stat.Summary{}
	}
	return stat.Summary{W: w, Mean: sum / w}
}

// whiteSpread ends the summary whiteSums started: the weighted squared
// deviations from its mean.
func whiteSpread[F tensor.Float](s *span[F], sm *stat.Summary) {
	if sm.W == 0 {
		return
	}
	mean := sm.Mean
	var m2 float64
	d := s.d[:len(s.r)]
	switch {
	case s.lens != nil:
		for t, a := range d {
			if s.isScored(t) {
				x := float64(a) - mean
				m2 += float64(s.lens[t]) * x * x
			}
		}
	case s.scored == nil:
		for _, a := range d {
			x := float64(a) - mean
			m2 += x * x
		}
	default:
		sc := s.scored[:len(d)]
		for t, a := range d {
			if sc[t] {
				x := float64(a) - mean
				m2 += x * x
			}
		}
	}
	sm.M2 = m2
}

// The kinds of row of the whitening phase.
const (
	rowGeneral = iota // whitened group by group (whiten)
	rowPlain          // plain, its advantages written: whitenFlat
	rowFused          // plain, nothing written yet: whitenFused
)

// whitenFused writes the whitened advantages of the groups first … last−1
// of a plain row straight from the rewards, (x − mean_B)·scale with x the
// centred reward R − mean_g (or R, or exactly 0 for a group of equal
// rewards under ReinforcePlusPlusBaseline): the values whiteMoments
// summarised, rounded to F once. On an overflow it returns the index met
// and its error.
func (e *estimate[F]) whitenFused(first, last int) (int, error) {
	size := e.g.size
	mean, scale := e.whiteMean, e.whiteScale
	plus := e.cfg.Estimator == ReinforcePlusPlus
	for k := first; k < last; k++ {
		lo, hi := k*size, (k+1)*size
		d, r := e.dst[lo:hi:hi], e.r[lo:hi:hi]
		d = d[:len(r)]
		switch {
		case plus:
			for t, v := range r {
				d[t] = F((float64(v) - mean) * scale)
			}
		case e.status[k] == groupVanished:
			a := F((0 - mean) * scale)
			for t := range d {
				d[t] = a
			}
		default:
			m := e.means[k]
			for t, v := range r {
				d[t] = F(((float64(v) - m) - mean) * scale)
			}
		}
	}
	if e.whiteChecked {
		lo, hi := first*size, last*size
		for t, a := range e.dst[lo:hi] {
			if !tensor.IsFinite(a) {
				return lo + t, overflow(lo+t, float64(a), e.cfg)
			}
		}
	}
	return 0, nil
}

// whitenFlat applies the batch whitening to dst[lo:hi], all of whose
// members it covers; on an overflow it returns the index met and its
// error.
func (e *estimate[F]) whitenFlat(lo, hi int) (int, error) {
	mean, scale := e.whiteMean, e.whiteScale
	d := e.dst[lo:hi:hi]
	if !e.whiteChecked {
		for t, a := range d {
			d[t] = F((float64(a) - mean) * scale)
		}
		return 0, nil
	}
	var check uint64
	for t, a := range d {
		w := F((float64(a) - mean) * scale)
		d[t] = w
		check |= notFinite(w)
	}
	if check != 0 {
		for t, a := range d {
			if !tensor.IsFinite(a) {
				return lo + t, overflow(lo+t, float64(a), e.cfg)
			}
		}
	}
	return 0, nil
}

// whiten applies the batch whitening to group k's advantages.
func (e *estimate[F]) whiten(k int, s *span[F]) error {
	if !e.whitened(k) {
		return nil
	}
	mean, scale := e.whiteMean, e.whiteScale
	d := s.d[:len(s.r)]
	var check uint64
	if s.scored == nil {
		for t, a := range d {
			w := F((float64(a) - mean) * scale)
			d[t] = w
			check |= notFinite(w)
		}
	} else {
		sc := s.scored[:len(d)]
		for t, a := range d {
			if sc[t] {
				w := F((float64(a) - mean) * scale)
				d[t] = w
				check |= notFinite(w)
			}
		}
	}
	if check != 0 {
		// The first that overflows (its value before F is lost: the
		// infinity stands for it).
		for t, a := range d {
			if s.isScored(t) && !tensor.IsFinite(a) {
				return overflow(s.index(t), float64(a), e.cfg)
			}
		}
	}
	return nil
}

// allTrue reports whether every element of b is true, eight at a time
// (a bool is one byte, 0 or 1).
func allTrue(b []bool) bool {
	if len(b) == 0 {
		return true
	}
	const ones = 0x0101010101010101
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b))
	i := 0
	for ; i+8 <= len(bytes); i += 8 {
		if binary.LittleEndian.Uint64(bytes[i:]) != ones {
			return false
		}
	}
	for _, v := range b[i:] {
		if !v {
			return false
		}
	}
	return true
}

// notFinite is 0 for a finite a and not 0 for an infinity or NaN (a − a is
// +0 or NaN). OR-ed over a loop it is a check with no chain of dependent
// floating-point additions, which would bound the loop's speed.
func notFinite[F tensor.Float](a F) uint64 { return math.Float64bits(float64(a - a)) }
