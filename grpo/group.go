package grpo

import (
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/stat"
	"github.com/rlpost/rlpost/tensor"
)

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
