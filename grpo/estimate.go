package grpo

import (
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/internal/stat"
	"github.com/rlpost/rlpost/tensor"
)

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
	mean, m2 := white.Mean, white.M2
	if eps := e.cfg.WhitenMeanEps; eps > 0 {
		// verl's masked_mean divides by the count + ε, for the mean and
		// for the mean of the squares about it (Bessel's factor after):
		// the squares about the shifted mean are M2 + W·(mean − mean′)².
		shifted := mean * (white.W / (white.W + eps))
		m2 = (m2 + white.W*(mean-shifted)*(mean-shifted)) * (white.W / (white.W + eps))
		mean = shifted
	}
	div := white.W
	if e.cfg.Std == Unbiased {
		div--
	}
	variance := 0.0
	if div > 0 {
		variance = m2 / div
	}
	if math.IsInf(variance, 0) || math.IsNaN(variance) {
		return Stats{}, tensor.Errorf(tensor.ErrRange, "rewards", nil, "the variance of the advantages overflows float64; whitening is undefined")
	}
	e.whiteMean, e.whiteScale = mean, 1/math.Sqrt(variance+whitenEps)
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
