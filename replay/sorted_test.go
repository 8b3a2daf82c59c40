package replay

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// check fails t unless s holds exactly want (sorted) with a consistent
// block index.
func (s *sorted) check(t *testing.T, want []float64) {
	t.Helper()
	var all []float64
	for i, b := range s.blocks {
		if len(b) == 0 || len(b) > blockMax || (len(s.blocks) > 1 && len(b) < blockMin) {
			t.Fatalf("block %d holds %d values", i, len(b))
		}
		require.Equal(t, b[len(b)-1], s.last[i], "last[%d] block ends with", i)
		require.Equal(t, len(all), s.before(i), "before(%d)", i)
		all = append(all, b...)
	}
	require.True(t, slices.Equal(all, want), "holds %d values %v…", len(all), all[:min(len(all), 5)])
	require.Equal(t, len(want), s.len(), "holds %d values %v…", len(all), all[:min(len(all), 5)])
}

// TestSortedAgainstSlice grows the multiset to thousands of values (block
// splits), shrinks it to nothing (joins, rebalancing, the last block
// emptying) and grows it again, checking every query against a sorted
// slice.
func TestSortedAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s sorted
	var ref []float64
	value := func() float64 {
		if rng.IntN(2) == 0 {
			return float64(rng.IntN(21)) / 20 // many ties
		}
		return rng.NormFloat64()
	}
	for phase, target := range []int{5000, 0, 3000, 200} {
		for len(ref) != target {
			if len(ref) < target && (len(ref) == 0 || rng.IntN(10) < 7) || len(ref) > target && rng.IntN(10) < 3 {
				x := value()
				s.insert(x)
				i, _ := slices.BinarySearch(ref, x)
				ref = slices.Insert(ref, i, x)
			} else {
				x := ref[rng.IntN(len(ref))]
				s.erase(x)
				i, _ := slices.BinarySearch(ref, x)
				ref = slices.Delete(ref, i, i+1)
			}
			if rng.IntN(50) != 0 {
				continue
			}
			s.check(t, ref)
			for range 5 {
				x := value()
				lo, _ := slices.BinarySearch(ref, x)
				hi := lo
				for hi < len(ref) && ref[hi] == x {
					hi++
				}
				require.Equal(t, lo, s.count(x, false), "phase %d: count(%v)", phase, x)
				require.Equal(t, hi, s.count(x, true), "phase %d: count(%v)", phase, x)
			}
			if len(ref) > 0 {
				k := rng.IntN(len(ref))
				if got := s.kth(k); got != ref[k] {
					t.Fatalf("phase %d: kth(%d) = %v, want %v", phase, k, got, ref[k])
				}
			}
		}
		s.check(t, ref)
	}
}

// TestSortedSteadyStateAllocatesNothing: erasing and inserting at a
// constant size reuses blocks.
func TestSortedSteadyStateAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s sorted
	vals := make([]float64, 4000)
	for i := range vals {
		vals[i] = rng.Float64()
		s.insert(vals[i])
	}
	step := func() {
		i := rng.IntN(len(vals))
		s.erase(vals[i])
		vals[i] = rng.Float64()
		s.insert(vals[i])
	}
	for range 100000 {
		step()
	}
	if n := testing.AllocsPerRun(10000, step); n != 0 {
		t.Errorf("%v allocations per update", n)
	}
}
