package grpo

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/internal/stat"
	"github.com/rlpost/rlpost/tensor"
)

// Estimator is the baseline subtracted from each reward.
type Estimator int

const (
	// GRPO subtracts the group mean.
	GRPO Estimator = iota
	// RLOO subtracts the mean of the other members of the group
	// (leave-one-out).
	RLOO
)

// Scale is what the centred reward is divided by.
type Scale int

const (
	// ScaleGroup divides by the group's standard deviation + ε (GRPO).
	ScaleGroup Scale = iota
	// ScaleBatch divides by the standard deviation of all rewards + ε.
	ScaleBatch
	// ScaleNone does not divide (Dr. GRPO; TRL scale_rewards=False).
	ScaleNone
)

// Std selects the standard-deviation estimator.
type Std int

const (
	// Unbiased divides the sum of squares by n − 1 (torch.std's default).
	Unbiased Std = iota
	// Population divides by n.
	Population
)

// Config configures Advantages. Its zero value is the GRPO paper's
// estimator as printed (DeepSeekMath, arXiv 2402.03300, §4.1.2:
// (r − mean)/std over the group, unbiased std, no ε); a group whose rewards
// are all equal gets advantage 0 whatever ε. DefaultConfig adds verl's and
// TRL's ε = 1e-6.
type Config struct {
	Estimator Estimator
	Scale     Scale
	Std       Std
	// Eps is ε in the denominator, 1e-6 by default.
	Eps float64
	// Singleton is the advantage of a group with one (scored) member:
	// SingletonZero (the zero value) or SingletonReward (verl).
	Singleton Singleton
	// K is k of PassK: 0 means each group's size (verl's grpo_passk).
	K int
	// GPGAlpha is GPG's batch correction α; other estimators ignore it.
	GPGAlpha GPGAlpha
	// WhitenMeanEps is added to the count (the total length with
	// Inputs.Lengths) in the mean and variance of the REINFORCE++ pair's
	// whitening. 0 (default) takes the exact moments, so equal values
	// whiten to exactly 0; verl's masked_mean divides by count + 10⁻⁸
	// (VerlDefaults), which leaves about 10⁻⁴·x/count there instead
	// (docs/spec.md#group-advantages).
	WhitenMeanEps float64
}

// DefaultConfig is GRPO: group mean and unbiased group std, ε = 1e-6.
func DefaultConfig() Config { return Config{Eps: 1e-6} }

// Validate reports the first field of c that is out of its domain.
func (c Config) Validate() error {
	switch {
	case c.Estimator < GRPO || c.Estimator >= numEstimators:
		return tensor.Errorf(tensor.ErrRange, "Config.Estimator", nil, "%d is not an Estimator", int(c.Estimator))
	case c.Scale < ScaleGroup || c.Scale > ScaleNone:
		return tensor.Errorf(tensor.ErrRange, "Config.Scale", nil, "%d is not a Scale", int(c.Scale))
	case c.Std != Unbiased && c.Std != Population:
		return tensor.Errorf(tensor.ErrRange, "Config.Std", nil, "%d is not a Std", int(c.Std))
	case !(c.Eps >= 0) || math.IsInf(c.Eps, 1):
		return tensor.Errorf(tensor.ErrRange, "Config.Eps", nil, "%v, want a finite number ≥ 0", c.Eps)
	}
	return c.validateMore()
}

// Stats describe the groups of one Advantages call.
type Stats struct {
	// Groups is the number of groups; Singletons those with one member.
	Groups, Singletons int
	// Vanishing counts groups of two or more members whose rewards are all
	// equal: every advantage in them is 0 and they teach nothing.
	Vanishing int
	// VanishingFrac = Vanishing / Groups (0 without groups).
	VanishingFrac float64
	// MeanReward and StdReward describe all rewards (population std);
	// with a Scored mask, the scored ones.
	MeanReward, StdReward float64
	// Unscored counts the rewards the Scored mask excludes.
	Unscored int
}

// Groups says which rewards form a group: contiguous runs of a fixed size,
// or members sharing a group id.
type Groups struct {
	size   int
	order  []int // indices of the rewards, group by group (ids only)
	starts []int // group g is order[starts[g]:starts[g+1]] (ids only)
	n      int   // number of rewards the ids cover
}

// Contiguous groups rewards into consecutive runs of size members.
func Contiguous(size int) Groups { return Groups{size: size} }

// ByID groups rewards by ids[i], the group of reward i; ids may come in any
// order and any values. Groups are ordered by id. It allocates the index
// once, so that Advantages on the result does not.
func ByID(ids []int) (Groups, error) {
	if len(ids) == 0 {
		return Groups{}, tensor.Errorf(tensor.ErrEmpty, "group_ids", nil, "no rewards")
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return ids[a] - ids[b] })
	starts := []int{0}
	for k := 1; k < len(order); k++ {
		if ids[order[k]] != ids[order[k-1]] {
			starts = append(starts, k)
		}
	}
	starts = append(starts, len(order))
	return Groups{order: order, starts: starts, n: len(ids)}, nil
}

// count returns the number of groups for n rewards, or an error if g does
// not fit them.
func (g Groups) count(n int) (int, error) {
	if g.order != nil {
		if n != g.n {
			return 0, tensor.Errorf(tensor.ErrShape, "group_ids", nil, "cover %d rewards, have %d", g.n, n)
		}
		return len(g.starts) - 1, nil
	}
	if g.size < 1 {
		return 0, tensor.Errorf(tensor.ErrRange, "group_size", nil, "%d, want ≥ 1", g.size)
	}
	if n%g.size != 0 {
		return 0, tensor.Errorf(tensor.ErrShape, "group_size", nil, "%d does not divide the %d rewards", g.size, n)
	}
	return n / g.size, nil
}

// members returns the indices of group k: the contiguous range [lo, hi)
// when idx is nil, else the listed indices.
func (g Groups) members(k int) (lo, hi int, idx []int) {
	if g.order != nil {
		return 0, 0, g.order[g.starts[k]:g.starts[k+1]]
	}
	return k * g.size, (k + 1) * g.size, nil
}

// Advantages writes the advantage of every reward into dst (same length as
// rewards; it may be rewards itself, but may not overlap it otherwise:
// ErrOverlap) and returns group statistics. It allocates nothing.
func Advantages[F tensor.Float](dst, rewards []F, g Groups, cfg Config) (Stats, error) {
	if err := cfg.Validate(); err != nil {
		return Stats{}, fmt.Errorf("grpo: %w", err)
	}
	if cfg.general() {
		return AdvantagesWith(dst, rewards, g, cfg, Inputs[F]{})
	}
	n := len(rewards)
	if n == 0 {
		return Stats{}, fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrEmpty, "rewards", nil, "no rewards"))
	}
	if len(dst) != n {
		return Stats{}, fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d", len(dst), n))
	}
	if !tensor.Same(dst, rewards) {
		if err := tensor.CheckDisjoint("dst", dst, "rewards", rewards); err != nil {
			return Stats{}, fmt.Errorf("grpo: %w", err)
		}
	}
	groups, countErr := g.count(n)
	if countErr != nil {
		// The rewards' own errors come first, as on every other path.
		mean, _ := stat.Moments(rewards)
		if err := finiteMean(mean, rewards); err != nil {
			return Stats{}, err
		}
		return Stats{}, fmt.Errorf("grpo: %w", countErr)
	}
	j := parallel.Get[groupJob[F]](jobs)
	defer putJob(j)
	j.dst, j.rewards, j.g, j.cfg = dst, rewards, g, cfg
	j.status = slices.Grow(j.status[:0], groups)[:groups]
	// Groups go to the engine perGroupRow at a time (see Run), by id as
	// contiguous, so that the moments are combined in the same tree and
	// groups given either way give the same bits.
	rows := (groups + perGroupRow - 1) / perGroupRow
	j.parts = slices.Grow(j.parts[:0], rows)[:rows]
	width := max(n/rows, 1)
	// The batch moments come from the groups' own sums and spreads, each
	// row's combined in the row and the rows' in row order by the caller
	// (stat.Combine): no pass of their own, and the same bits whatever the
	// number of workers. A batch scale needs them before the groups are
	// written: a first run of the rows then takes only the moments.
	if cfg.Scale == ScaleBatch {
		j.momentsOnly = true
		parallel.Rows(j, rows, width)
		j.momentsOnly = false
		total := stat.Combine(j.parts)
		if err := finiteMean(total.Mean, rewards); err != nil {
			return Stats{}, err
		}
		if n > 1 || cfg.Std == Population {
			div := float64(n)
			if cfg.Std == Unbiased {
				div--
			}
			j.batchStd = math.Sqrt(total.M2 / div)
		}
	}
	parallel.Rows(j, rows, width)
	total := stat.Combine(j.parts)
	if err := finiteMean(total.Mean, rewards); err != nil {
		return Stats{}, err
	}
	st := Stats{Groups: groups, MeanReward: total.Mean, StdReward: math.Sqrt(total.M2 / float64(n))}
	for _, s := range j.status {
		switch s {
		case groupSingleton:
			st.Singletons++
		case groupVanished:
			st.Vanishing++
		case groupOverflow:
			return Stats{}, fmt.Errorf("grpo: %w", j.err)
		}
	}
	if groups > 0 {
		st.VanishingFrac = float64(st.Vanishing) / float64(groups)
	}
	return st, nil
}

// finiteMean reports a non-finite batch mean as the error it comes from:
// a float64 sum of float32 or finite float64 rewards is finite unless one
// of them is not.
func finiteMean[F tensor.Float](mean float64, rewards []F) error {
	if !(math.IsNaN(mean) || math.IsInf(mean, 0)) {
		return nil
	}
	if err := tensor.CheckFiniteVec("rewards", rewards); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	return fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrRange, "rewards", nil, "their sum overflows float64"))
}

// What a group's advantages came to.
const (
	groupOK uint8 = iota
	groupSingleton
	groupVanished // two or more members, all rewards equal
	groupOverflow // an advantage overflows F
)

// groupJob runs the groups of one Advantages call through the row engine,
// perGroupRow groups per row; each group's outcome goes to its own status byte,
// and each row's moments to its own Summary, combined afterwards in order.
type groupJob[F tensor.Float] struct {
	dst, rewards []F
	g            Groups
	batchStd     float64
	cfg          Config
	status       []uint8
	// parts[row] is the summary of the row's rewards; with momentsOnly
	// set, the rows take it and write nothing else.
	parts       []stat.Summary
	momentsOnly bool

	mu       sync.Mutex
	badGroup int   // the first group (in order) whose advantages overflow
	err      error // its error
}

// jobs recycles the jobs of this package's op, one free list per storage
// type.
var jobs = parallel.Jobs{parallel.NewFree[groupJob[float32]](4), parallel.NewFree[groupJob[float64]](4)}

func putJob[F tensor.Float](j *groupJob[F]) {
	status, parts := j.status, j.parts
	*j = groupJob[F]{status: status, parts: parts}
	parallel.Put(jobs, j)
}

func (j *groupJob[F]) Run(row int) {
	first := row * perGroupRow
	last := min(first+perGroupRow, len(j.status))
	var parts [perGroupRow]stat.Summary
	k := first
	if j.momentsOnly {
		for ; k < last; k++ {
			lo, hi, idx := j.g.members(k)
			parts[k-first], _ = summarize(j.rewards, idx, lo, hi)
		}
		j.parts[row] = stat.Combine(parts[:last-first])
		return
	}
	if j.g.order == nil {
		// Four groups at a time have their sums and spreads taken
		// together (same arithmetic, so the same bits).
		size := j.g.size
		for ; size > 1 && k+4 <= last; k += 4 {
			lo := k * size
			var vanished [4]bool
			sums := (*[4]stat.Summary)(parts[k-first : k-first+4])
			bad := contiguousGroups4(j.dst[lo:lo+4*size], j.rewards[lo:lo+4*size], size, &vanished, sums, j.batchStd, j.cfg)
			for q := range 4 {
				var err error
				if bad[q] {
					// Find the member that overflows, as contiguousGroup would.
					_, _, err = contiguousGroup(j.dst, j.rewards, lo+q*size, lo+(q+1)*size, j.batchStd, j.cfg)
				}
				j.record(k+q, false, vanished[q], err)
			}
		}
	}
	for ; k < last; k++ {
		lo, hi, idx := j.g.members(k)
		var vanished bool
		var err error
		if idx == nil {
			parts[k-first], vanished, err = contiguousGroup(j.dst, j.rewards, lo, hi, j.batchStd, j.cfg)
		} else {
			parts[k-first], vanished, err = group(j.dst, j.rewards, idx, j.batchStd, j.cfg)
		}
		j.record(k, hi-lo == 1 || len(idx) == 1, vanished, err)
	}
	j.parts[row] = stat.Combine(parts[:last-first])
}

// record sets group k's status.
func (j *groupJob[F]) record(k int, singleton, vanished bool, err error) {
	switch {
	case err != nil:
		j.status[k] = groupOverflow
		j.mu.Lock()
		if j.err == nil || k < j.badGroup {
			j.badGroup, j.err = k, err
		}
		j.mu.Unlock()
	case singleton:
		j.status[k] = groupSingleton
	case vanished:
		j.status[k] = groupVanished
	default:
		j.status[k] = groupOK
	}
}

// scaleFor returns the factor that turns R − mean into the advantage of a
// group of size members with standard deviation std.
func scaleFor(size int, std, batchStd float64, cfg Config) float64 {
	denom := 1.0
	switch cfg.Scale {
	case ScaleGroup:
		denom = std + cfg.Eps
	case ScaleBatch:
		denom = batchStd + cfg.Eps
	}
	// RLOO: R_i − (sum − R_i)/(n − 1) = n/(n − 1)·(R_i − mean).
	centre := 1.0
	if cfg.Estimator == RLOO {
		centre = float64(size) / float64(size-1)
	}
	if cfg.Scale == ScaleNone {
		return centre
	}
	return centre / denom
}

func overflow(j int, a float64, cfg Config) error {
	return tensor.Errorf(tensor.ErrRange, "dst", tensor.At(j),
		"advantage %v overflows (Config.Eps = %v with a degenerate spread)", a, cfg.Eps)
}

// perGroupRow is how many contiguous groups one row of the engine takes: a
// multiple of the four whose sums contiguousSums4 takes together, and
// enough that a row's call costs little next to its work.
const perGroupRow = 16

// groups4 are the moments of four groups of equal size.
type groups4 struct {
	sum, mean, ss [4]float64
	differ        [4]bool // not all members equal
}

// moments4 takes the moments of the four consecutive groups of size
// members that make up r: each group's sum in member order over its size,
// then the squared deviations from that mean in a second pass, as
// summarize does. Each sum is a chain of dependent additions; running four
// groups' chains in one loop lets the processor overlap them instead of
// waiting on each addition in turn.
func moments4[F tensor.Float](r []F, size int) (g groups4) {
	r0 := r[:size:size]
	r1 := r[size : 2*size : 2*size]
	r2 := r[2*size : 3*size : 3*size]
	r3 := r[3*size : 4*size : 4*size]
	r1, r2, r3 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)]
	var s0, s1, s2, s3 float64
	var c0, c1, c2, c3 uint // members unequal to the first, float64 storage only
	var z F
	exact := unsafe.Sizeof(z) == 4
	f0, f1, f2, f3 := r0[0], r1[0], r2[0], r3[0]
	for i, v0 := range r0 {
		v1, v2, v3 := r1[i], r2[i], r3[i]
		s0 += float64(v0)
		s1 += float64(v1)
		s2 += float64(v2)
		s3 += float64(v3)
		if !exact {
			c0 += b2u(v0 != f0)
			c1 += b2u(v1 != f1)
			c2 += b2u(v2 != f2)
			c3 += b2u(v3 != f3)
		}
	}
	n := float64(size)
	m0, m1, m2, m3 := s0/n, s1/n, s2/n, s3/n
	var q0, q1, q2, q3 float64
	for i, v0 := range r0 {
		x0, x1 := float64(v0)-m0, float64(r1[i])-m1
		x2, x3 := float64(r2[i])-m2, float64(r3[i])-m3
		q0 += x0 * x0
		q1 += x1 * x1
		q2 += x2 * x2
		q3 += x3 * x3
	}
	g.sum = [4]float64{s0, s1, s2, s3}
	g.mean = [4]float64{m0, m1, m2, m3}
	g.ss = [4]float64{q0, q1, q2, q3}
	if exact {
		// float32 storage: a float64 sum of k copies of a float32 value
		// is exact (24 + log2 k bits), so a group of equal members has
		// its mean equal to them and ss = 0; and members that differ
		// cannot all equal the mean, so ss > 0 (a float32 difference,
		// squared, does not underflow float64). ss ≠ 0 is then "the
		// members differ", and NaN, which makes the call an error anyway,
		// counts as differing as v != first does.
		g.differ = [4]bool{q0 != 0, q1 != 0, q2 != 0, q3 != 0}
	} else {
		g.differ = [4]bool{c0 != 0, c1 != 0, c2 != 0, c3 != 0}
	}
	return g
}

// contiguousGroups4 writes the advantages of the four consecutive groups
// of size ≥ 2 members that make up r into d, with exactly the arithmetic of
// contiguousGroup (each group's sums in member order, so the same bits),
// sets vanished and the groups' summaries (as summarize gives them), and
// reports the groups whose advantages overflow F. The moments come from
// moments4; the finiteness checks, chains of dependent additions too, run
// four groups to a loop for the same reason.
func contiguousGroups4[F tensor.Float](d, r []F, size int, vanished *[4]bool, sums *[4]stat.Summary, batchStd float64, cfg Config) (bad [4]bool) {
	mo := moments4(r, size)
	n := float64(size)
	m0, m1, m2, m3 := mo.mean[0], mo.mean[1], mo.mean[2], mo.mean[3]
	q0, q1, q2, q3 := mo.ss[0], mo.ss[1], mo.ss[2], mo.ss[3]
	for q := range 4 {
		sums[q] = stat.Summary{W: n, Mean: mo.mean[q], M2: mo.ss[q]}
	}
	differ := mo.differ
	r0 := r[:size:size]
	r1 := r[size : 2*size : 2*size]
	r2 := r[2*size : 3*size : 3*size]
	r3 := r[3*size : 4*size : 4*size]
	r1, r2, r3 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)]
	div := n
	if cfg.Std == Unbiased {
		div--
	}
	sc0 := scaleFor(size, math.Sqrt(q0/div), batchStd, cfg)
	sc1 := scaleFor(size, math.Sqrt(q1/div), batchStd, cfg)
	sc2 := scaleFor(size, math.Sqrt(q2/div), batchStd, cfg)
	sc3 := scaleFor(size, math.Sqrt(q3/div), batchStd, cfg)
	d0 := d[:size:size]
	d1 := d[size : 2*size : 2*size]
	d2 := d[2*size : 3*size : 3*size]
	d3 := d[3*size : 4*size : 4*size]
	d0, d1, d2, d3 = d0[:len(r0)], d1[:len(r0)], d2[:len(r0)], d3[:len(r0)]
	// |R − mean| ≤ sqrt(ss) bounds every advantage (shiftBound): when
	// the bound is finite in F for the four groups, no member is checked.
	lim := maxOf[F]()
	if 4*math.Sqrt(q0)*math.Abs(sc0) < lim && 4*math.Sqrt(q1)*math.Abs(sc1) < lim &&
		4*math.Sqrt(q2)*math.Abs(sc2) < lim && 4*math.Sqrt(q3)*math.Abs(sc3) < lim {
		for i, v0 := range r0 {
			d0[i] = F((float64(v0) - m0) * sc0)
			d1[i] = F((float64(r1[i]) - m1) * sc1)
			d2[i] = F((float64(r2[i]) - m2) * sc2)
			d3[i] = F((float64(r3[i]) - m3) * sc3)
		}
		for q := range 4 {
			if !differ[q] {
				// Exactly 0, not the rounding residue of R − mean(R).
				clear(d[q*size : (q+1)*size])
				vanished[q] = true
			}
		}
		return bad
	}
	// ch stays 0 while every advantage is finite in F (x − x is NaN for
	// an infinity): one test per group after the loop.
	var ch0, ch1, ch2, ch3 F
	for i, v0 := range r0 {
		a0 := F((float64(v0) - m0) * sc0)
		a1 := F((float64(r1[i]) - m1) * sc1)
		a2 := F((float64(r2[i]) - m2) * sc2)
		a3 := F((float64(r3[i]) - m3) * sc3)
		d0[i], d1[i], d2[i], d3[i] = a0, a1, a2, a3
		ch0 += a0 - a0
		ch1 += a1 - a1
		ch2 += a2 - a2
		ch3 += a3 - a3
	}
	ch := [4]F{ch0, ch1, ch2, ch3}
	for q := range 4 {
		if !differ[q] {
			// Exactly 0, not the rounding residue of R − mean(R).
			clear(d[q*size : (q+1)*size])
			vanished[q] = true
			continue
		}
		bad[q] = ch[q] != 0 || ch[q] != ch[q]
	}
	return bad
}

// b2u is 1 for true and 0 for false; the compiler makes it a flag move.
func b2u(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// contiguousGroup writes the advantages of rewards[lo:hi], the common case,
// in plain loops over slices. It returns the group's summary (as summarize
// gives it) and whether the group vanished (two or more members, all
// rewards equal).
func contiguousGroup[F tensor.Float](dst, rewards []F, lo, hi int, batchStd float64, cfg Config) (stat.Summary, bool, error) {
	r := rewards[lo:hi:hi]
	d := dst[lo:hi:hi]
	d = d[:len(r)]
	size := len(r)
	first := r[0]
	var sum float64
	differ := false
	for _, v := range r {
		sum += float64(v)
		differ = differ || v != first
	}
	mean := sum / float64(size)
	var ss float64
	for _, v := range r {
		x := float64(v) - mean
		ss += x * x
	}
	sm := stat.Summary{W: float64(size), Mean: mean, M2: ss}
	if size == 1 || !differ {
		// Exactly 0, not the rounding residue of R − mean(R).
		clear(d)
		return sm, size > 1, nil
	}
	div := float64(size)
	if cfg.Std == Unbiased {
		div--
	}
	scale := scaleFor(size, math.Sqrt(ss/div), batchStd, cfg)
	// check stays 0 while every advantage is finite in F: x − x is NaN
	// for an infinity. One test after the loop keeps the loop branch-free.
	var check F
	for i, v := range r {
		a := F((float64(v) - mean) * scale)
		d[i] = a
		check += a - a
	}
	if check != 0 || check != check {
		for i, v := range r {
			if a := (float64(v) - mean) * scale; !tensor.IsFinite(F(a)) {
				return sm, false, overflow(lo+i, a, cfg)
			}
		}
	}
	return sm, false, nil
}

// group writes the advantages of the rewards at idx (groups given by ids).
// It returns the group's summary and whether the group vanished.
func group[F tensor.Float](dst, rewards []F, idx []int, batchStd float64, cfg Config) (stat.Summary, bool, error) {
	size := len(idx)
	sm, equal := summarize(rewards, idx, 0, 0)
	if size == 1 || equal {
		for _, j := range idx {
			dst[j] = 0
		}
		return sm, size > 1, nil
	}
	scale := scaleFor(size, stdOf(sm, cfg.Std), batchStd, cfg)
	for _, j := range idx {
		a := (float64(rewards[j]) - sm.Mean) * scale
		dst[j] = F(a)
		if !tensor.IsFinite(dst[j]) {
			return sm, false, overflow(j, a, cfg)
		}
	}
	return sm, false, nil
}

// summarize returns the summary of the rewards at idx, or of
// rewards[lo:hi] when idx is nil: their sum in member order over their
// count, and the sum of squared deviations from that mean in a second
// pass; and whether they are all equal.
func summarize[F tensor.Float](rewards []F, idx []int, lo, hi int) (s stat.Summary, equal bool) {
	at := func(i int) F {
		if idx != nil {
			return rewards[idx[i]]
		}
		return rewards[lo+i]
	}
	n := hi - lo
	if idx != nil {
		n = len(idx)
	}
	first := at(0)
	equal = true
	var sum float64
	for i := range n {
		r := at(i)
		sum += float64(r)
		equal = equal && r == first
	}
	mean := sum / float64(n)
	var ss float64
	for i := range n {
		d := float64(at(i)) - mean
		ss += d * d
	}
	return stat.Summary{W: float64(n), Mean: mean, M2: ss}, equal
}

// stdOf is the standard deviation of a group with summary s (0 for fewer
// than two members under Unbiased).
func stdOf(s stat.Summary, kind Std) float64 {
	div := s.W
	if kind == Unbiased {
		div--
	}
	if div <= 0 {
		return 0
	}
	return math.Sqrt(s.M2 / div)
}

// meanStd returns the mean and standard deviation of the rewards at idx, or
// of rewards[lo:hi] when idx is nil, in two float64 passes, and whether all
// of them are equal. With fewer than two values the unbiased std is 0.
func meanStd[F tensor.Float](rewards []F, idx []int, lo, hi int, kind Std) (mean, std float64, equal bool) {
	s, equal := summarize(rewards, idx, lo, hi)
	if equal {
		return s.Mean, 0, true
	}
	return s.Mean, stdOf(s, kind), false
}
