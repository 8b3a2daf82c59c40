package grpo

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/tensor"
)

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
