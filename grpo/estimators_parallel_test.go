package grpo_test

import (
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/stretchr/testify/require"
)

// TestEstimatorsParallel: a batch large enough for the row engine gives,
// bit for bit, what each group gives alone (for the estimators whose
// groups do not share a batch statistic), with a mask, and the counts add
// up.
func TestEstimatorsParallel(t *testing.T) {
	const size, groups = 8, 4096
	n := size * groups
	r := make([]float64, n)
	scored := make([]bool, n)
	lengths := make([]int, n)
	for i := range r {
		r[i] = float64((i*7919)%13) / 4
		if (i/size)%5 == 0 {
			r[i] = 1 // equal groups
		}
		scored[i] = (i*31)%11 != 0
		lengths[i] = 1 + (i*17)%23
	}
	for _, e := range []grpo.Estimator{grpo.GRPO, grpo.RLOO, grpo.OPO, grpo.PassK} {
		cfg := grpo.Config{Estimator: e, Eps: 1e-6}
		in := grpo.Inputs[float64]{Scored: scored}
		if e == grpo.OPO {
			in.Lengths = lengths
		}
		got := make([]float64, n)
		st, err := grpo.AdvantagesWith(got, r, grpo.Contiguous(size), cfg, in)
		require.NoError(t, err)
		var singles, vanished int
		for k := range groups {
			lo, hi := k*size, (k+1)*size
			one := make([]float64, size)
			part := grpo.Inputs[float64]{Scored: scored[lo:hi]}
			if in.Lengths != nil {
				part.Lengths = lengths[lo:hi]
			}
			s, err := grpo.AdvantagesWith(one, r[lo:hi], grpo.Contiguous(size), cfg, part)
			require.NoError(t, err)
			require.Equal(t, one, got[lo:hi], "estimator %d group %d", e, k)
			singles += s.Singletons
			vanished += s.Vanishing
		}
		require.Equal(t, singles, st.Singletons)
		require.Equal(t, vanished, st.Vanishing)
		require.Positive(t, st.Vanishing)
	}
}
