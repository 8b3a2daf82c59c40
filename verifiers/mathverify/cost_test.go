package mathverify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cost bounds of one Verify call on any input up to costInputBytes
// (docs/spec.md#math-verifier, "Limits").
const (
	costInputBytes = 64 << 10
	costMaxTime    = 50 * time.Millisecond
	costMaxAlloc   = 16 << 20
)

// hostile is one generated worst case: a response and a reference.
type hostile struct{ name, pred, gold string }

// primes are bases for exact powers whose reciprocals share no factor, so
// that a sum of them keeps every bit.
var primes = []int{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97}

// hostileInputs generates the worst cases by category, each category over
// a grid of sizes and a seeded random choice of its parameters: huge
// exponents, many terms, deep nesting, big factorials and binomials, huge
// sets and matrices, long digit strings. Every pred and gold is at most
// costInputBytes.
func hostileInputs() []hostile {
	rng := rand.New(rand.NewPCG(26, 5))
	var out []hostile
	add := func(cat string, pred, gold string) {
		if len(pred) > costInputBytes || len(gold) > costInputBytes {
			return
		}
		out = append(out, hostile{fmt.Sprintf("%s/%d", cat, len(out)), pred, gold})
	}
	join := func(n int, sep string, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, sep)
	}
	box := func(s string) string { return `\boxed{` + s + `}` }
	// Huge exponents: sums of reciprocal prime powers, powers of
	// fractions, towers, exponents near the exact limit.
	for _, terms := range []int{1, 4, 12, 20, 25} {
		for _, e := range []int{900, 1500, 4096, 9999, 10000 + rng.IntN(1000)} {
			add("exponent", box(join(terms, "+", func(i int) string { return fmt.Sprintf(`\frac{1}{%d^{%d}}`, primes[i%len(primes)], e) })), "1")
			add("exponent", box(join(terms, "+", func(i int) string { return fmt.Sprintf(`\frac{1}{%d}^{%d}`, primes[i%len(primes)], e) })), "1")
			add("exponent", box(join(terms, `\cdot `, func(i int) string { return fmt.Sprintf(`%d^{%d}`, primes[i%len(primes)], e) })), "2")
		}
	}
	add("exponent", box(`{{{2^{4096}}^{4096}}^{4096}}^{4096}`), "1")
	add("exponent", box(`2^{2^{2^{2^{2^{2}}}}}`), "2")
	add("exponent", box(`99999^{99999}`), "1")
	add("exponent", box(`\left(\frac{9999}{9998}\right)^{9999} - \left(\frac{9998}{9997}\right)^{9998}`), "0")
	// Many terms: long sums and products of numbers, fractions, variables.
	for _, n := range []int{1000, 4000, 8000} {
		add("terms", box(join(n/2, "+", func(int) string { return "1" })), strconv.Itoa(n))
		add("terms", box(join(n/12, "+", func(i int) string { return fmt.Sprintf(`\frac{1}{%d}`, i+2) })), "1")
		add("terms", box(join(n/8, "+", func(i int) string { return fmt.Sprintf("x^{%d}", i%50) })), "x")
		add("terms", box(join(n/10, "", func(i int) string { return fmt.Sprintf("(x+%d)", i%9) })), "x")
		add("terms", box(`\sum_{k=1}^{10000} \frac{1}{k^{50}}`), "1")
		add("terms", box(`\sum_{i=1}^{9999}\sum_{j=1}^{9999} ij`), "1")
		add("terms", join(n/10, " or ", func(i int) string { return `\boxed{` + strconv.Itoa(i) + `}` }), "1")
	}
	// Deep nesting: brackets, fractions, roots, braces, absolute values.
	for _, d := range []int{60, 64, 500, 4000, 20000} {
		add("nesting", box(strings.Repeat("(", d)+"1"+strings.Repeat(")", d)), "1")
		add("nesting", box(strings.Repeat(`\frac{1}{`, d/4)+"2"+strings.Repeat("}", d/4)), "1")
		add("nesting", box(strings.Repeat(`\sqrt{`, d/4)+"x"+strings.Repeat("}", d/4)), "x")
		add("nesting", box(strings.Repeat("{", d)+"1"+strings.Repeat("}", d)), "1")
		add("nesting", box(strings.Repeat("2^{", d/4)+"2"+strings.Repeat("}", d/4)), "1")
		add("nesting", strings.Repeat(`\boxed{`, d/4)+"1"+strings.Repeat("}", d/4), "1")
	}
	// Big factorials and binomials.
	for _, n := range []int{1000, 999, 10000, 100000} {
		add("factorial", box(fmt.Sprintf("%d!", n)), "1")
		add("factorial", box(fmt.Sprintf(`\frac{1}{%d!}+2`, n)), "2")
		add("factorial", box(join(40, "+", func(i int) string { return fmt.Sprintf(`\binom{%d}{%d}`, n, n/2-i) })), "1")
		add("factorial", box(join(40, "+", func(i int) string { return fmt.Sprintf(`\frac{1}{%d!}`, n-i) })), "1")
		add("factorial", box(fmt.Sprintf("(%d!)!", n)), "1")
	}
	// Huge sets and matrices, against huge golds of the same shape.
	for _, n := range []int{500, 1500, 8000} {
		set := func(off int) string {
			return `\{` + join(n/5, ",", func(i int) string { return strconv.Itoa((i*7919 + off) % 100000) }) + `\}`
		}
		add("sets", box(set(1)), set(0))
		add("sets", box(set(0)), set(0))
		add("sets", box(join(n/12, ",", func(i int) string { return fmt.Sprintf(`\frac{%d}{%d}`, i, i+7) })), join(n/12, ",", func(i int) string { return fmt.Sprintf(`\frac{%d}{%d}`, i+1, i+7) }))
		add("sets", box(join(n/10, `\cup`, func(i int) string { return fmt.Sprintf("(%d,%d)", 2*i, 2*i+1) })), join(n/10, `\cup`, func(i int) string { return fmt.Sprintf("[%d,%d]", 2*i, 2*i+1) }))
		side := 1
		for side*side*3 < n {
			side++
		}
		mat := func(v int) string {
			return `\begin{pmatrix}` + join(side, `\\`, func(r int) string {
				return join(side, "&", func(c int) string { return strconv.Itoa((r*side + c + v) % 10) })
			}) + `\end{pmatrix}`
		}
		add("matrices", box(mat(0)), mat(0))
		add("matrices", box(mat(0)+mat(1)+`\cdot`+mat(2)), mat(3))
		add("matrices", box(mat(1)+`^{50}`), mat(3))
		add("matrices", box(`[`+join(side, ",", func(r int) string {
			return "[" + join(side, ",", func(c int) string { return strconv.Itoa(r + c) }) + "]"
		})+`]`), mat(0))
	}
	// Long digit strings.
	digits := func(n int) string {
		var sb strings.Builder
		sb.WriteByte('1' + byte(rng.IntN(9)))
		for range n - 1 {
			sb.WriteByte('0' + byte(rng.IntN(10)))
		}
		return sb.String()
	}
	for _, n := range []int{100, 4096, 4097, 8000, 60000} {
		d := digits(n)
		add("digits", box(d), d)
		add("digits", box(d+"."+d[:n/2]), d)
		add("digits", box(join(8, "+", func(int) string { return digits(min(n, 1000)) })), d)
		add("digits", box(join(4, `\cdot `, func(int) string { return digits(min(n, 4000)) })), d)
		add("digits", "The answer is "+d+".", "0."+d)
		add("digits", box(d[:min(n, 3000)]+"^{"+d[:4]+"}"), d)
	}
	// Long texts: a 64 KiB chain of thought, many answer phrases.
	cot := strings.Repeat("We compute $3^2 + 4 = 13$, so 13 apples. ", costInputBytes/48) + box("13")
	add("text", cot, "13")
	add("text", strings.Repeat("the answer is 3 or ", costInputBytes/20), "3")
	add("text", strings.Repeat("$1$ and $", costInputBytes/10), "1")
	add("text", box("1"), strings.Repeat("1+", costInputBytes/2-1)+"1")
	return out
}

// runHostile verifies every hostile input once and returns the verdicts.
func runHostile(t *testing.T, cases []hostile) []Result {
	v, err := New(DefaultOptions())
	require.NoError(t, err)
	out := make([]Result, len(cases))
	for i, c := range cases {
		res, err := v.Verify(context.Background(), c.pred, c.gold)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax, c.name)
			res.Reason = "error: " + err.Error()
		}
		out[i] = res
	}
	return out
}

// TestHostileCost runs every generated hostile input and requires each
// call to take less than costMaxTime of CPU time on its thread and to
// allocate less than costMaxAlloc (the least of three runs, so that a
// loaded machine's pauses and its caches do not count), and never to reach the wall-clock budget: every limit hit is a
// work limit, the same on any machine.
func TestHostileCost(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: -short")
	}
	cases := hostileInputs()
	v, err := New(DefaultOptions())
	require.NoError(t, err)
	var slowest time.Duration
	var most uint64
	var slowName, mostName string
	var ms runtime.MemStats
	for _, c := range cases {
		best, least := time.Duration(1<<62), uint64(1<<63)
		var res Result
		for range 3 {
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			took := threadCPU(func() { res, err = v.Verify(context.Background(), c.pred, c.gold) })
			runtime.ReadMemStats(&ms)
			if err != nil {
				break
			}
			best, least = min(best, took), min(least, ms.TotalAlloc-before)
		}
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax, c.name)
			continue
		}
		assert.False(t, res.Timeout, "%s: reached the wall-clock budget (reason %q, pred %.80s); want a work limit", c.name, res.Reason, res.Pred)
		if best > costMaxTime || least > costMaxAlloc {
			t.Errorf("%s (%d+%d bytes): %v and %.1f MiB (reason %q); limits %v and %d MiB",
				c.name, len(c.pred), len(c.gold), best, float64(least)/(1<<20), res.Reason, costMaxTime, costMaxAlloc>>20)
		}
		if best > slowest {
			slowest, slowName = best, c.name
		}
		if least > most {
			most, mostName = least, c.name
		}
	}
	t.Logf("%d hostile inputs: slowest %v (%s), most memory %.1f MiB (%s)", len(cases), slowest, slowName, float64(most)/(1<<20), mostName)
}

// TestHostileDeterministic requires the same verdict (score, reason) for
// every hostile input on repeated runs, with GOMAXPROCS 1, and while
// goroutines keep every CPU busy.
func TestHostileDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: -short")
	}
	cases := hostileInputs()
	want := runHostile(t, cases)
	check := func(when string, got []Result) {
		for i := range cases {
			assert.Equal(t, want[i].Score, got[i].Score, "%s %s: reason %q, first run %q", cases[i].name, when, got[i].Reason, want[i].Reason)
			assert.Equal(t, want[i].Reason, got[i].Reason, "%s %s", cases[i].name, when)
		}
	}
	check("on a second run", runHostile(t, cases))
	prev := runtime.GOMAXPROCS(1)
	check("with GOMAXPROCS 1", runHostile(t, cases))
	runtime.GOMAXPROCS(prev)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 1.0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 1000 {
					x = x*1.0000001 + 1e-9
				}
			}
		}()
	}
	got := runHostile(t, cases)
	close(stop)
	wg.Wait()
	check("under a CPU hog", got)
}
