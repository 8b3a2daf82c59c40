package mathverify

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rlpost/rlpost/internal/testkit/mvcases"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// typical are short model answers of the usual kinds.
var typical = []struct{ gold, pred string }{
	{`$\frac{14}{3}$`, `Adding the three values gives $2+\frac{5}{3}+1=\boxed{\frac{14}{3}}$.`},
	{`$3\sqrt{13}$`, `By the distance formula the length is $\sqrt{117} = \boxed{3\sqrt{13}}$.`},
	{`$(3, \frac{\pi}{2})$`, `The polar coordinates are $\boxed{\left( 3, \frac{\pi}{2} \right)}$.`},
	{`$[-2, 7]$`, `The solution set is $x \in \boxed{[-2, 7]}$.`},
	{`$28\%$`, `The total loss is $\boxed{28\%}$.`},
	{`$x^2+2x+1$`, `Expanding, $\boxed{(x+1)^2}$.`},
	{`$\{1, -2\}$`, `The roots are $\boxed{-2}$ and $\boxed{1}$.`},
	{`12000023`, `Final Answer: The final answer is 12,000,023. I hope it is correct.`},
}

func BenchmarkVerify(b *testing.B) {
	opts := DefaultOptions()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c := typical[i%len(typical)]
		if _, err := Verify(ctx, c.gold, c.pred, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyCases cycles through Math-Verify's cases, long chains of
// thought included.
func BenchmarkVerifyCases(b *testing.B) {
	cases := loadCases(b)
	opts := make([]Options, len(cases))
	for i, c := range cases {
		p, err := mvcases.Params(c.Notes)
		if err != nil {
			b.Fatal(err)
		}
		if opts[i], err = ParseOptions(p); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(cases)
		if _, err := Verify(ctx, cases[k].Gold, cases[k].Pred, opts[k]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLatency measures one verification per case of the case file and
// reports the median and the 99th percentile over the cases. Each case is
// timed 5 times and its median kept, so that a preempted run on a shared
// machine does not count as the case's cost; the distribution of all
// single calls is reported too. The limits (median 50 µs,
// p99 1 ms) are enforced with RLPOST_CHECK_TIMING=1; by default the test
// only reports, because a shared CI machine under load is no measurement.
//
//	RLPOST_CHECK_TIMING=1 go test ./verifiers/mathverify -run TestLatency -v
func TestLatency(t *testing.T) {
	cases := loadCases(t)
	ctx := context.Background()
	per := make([]time.Duration, 0, len(cases))
	var all []time.Duration
	for _, c := range cases {
		p, err := mvcases.Params(c.Notes)
		require.NoError(t, err)
		o, err := ParseOptions(p)
		require.NoError(t, err)
		var runs [5]time.Duration
		for r := range runs {
			start := time.Now()
			if _, err := Verify(ctx, c.Gold, c.Pred, o); err != nil && !errors.Is(err, ErrSyntax) {
				t.Fatalf("%s: %v", c.ID, err)
			}
			runs[r] = time.Since(start)
		}
		all = append(all, runs[:]...)
		slices.Sort(runs[:])
		per = append(per, runs[2])
	}
	slices.Sort(per)
	med, p99, worst := per[len(per)/2], per[(len(per)*99+99)/100-1], per[len(per)-1]
	t.Logf("%d cases: median %v, p99 %v, max %v per verification", len(per), med, p99, worst)
	slices.Sort(all)
	t.Logf("%d single calls: median %v, p99 %v, max %v", len(all), all[len(all)/2], all[(len(all)*99+99)/100-1], all[len(all)-1])
	if os.Getenv("RLPOST_CHECK_TIMING") != "1" {
		return
	}
	assert.LessOrEqual(t, med, 50*time.Microsecond, "median (limit 50µs), p99 (limit 1ms)")
	assert.LessOrEqual(t, p99, time.Millisecond, "median (limit 50µs), p99 (limit 1ms)")
}
