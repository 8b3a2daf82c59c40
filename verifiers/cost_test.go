package verifiers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cost bounds of one verifier call on any input up to costInputBytes.
const (
	costInputBytes = 64 << 10
	costMaxTime    = 50 * time.Millisecond
	costMaxAlloc   = 16 << 20
)

// costCase is one worst-case call: a verifier on a hostile pred, ref and
// params.
type costCase struct {
	name, verifier, pred, ref string
	params                    verifiers.Params
}

// worstCases are the most expensive inputs of at most costInputBytes we
// could construct for each verifier: the generic hostile shapes for every
// verifier, then each verifier's own super-linear paths.
func worstCases() []costCase {
	const n = costInputBytes - 64
	var cases []costCase
	gen := hostileInputsN(n)
	names := make([]string, 0, len(gen))
	for k := range gen {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, v := range verifiers.Names() {
		for _, k := range names {
			cases = append(cases, costCase{k, v, gen[k], validRefs[v], validParams[v]})
		}
	}
	fill := func(unit string, n int) string { return strings.Repeat(unit, n/len(unit)) }
	cot := fill("We consider the case $x = 3$ and compute $3^2 + 4 = 13$, so 13 apples. ", n-40) + `\boxed{13}`
	boxes := detectionGrid(verifiers.MaxBoxes)
	refs, _ := json.Marshal(slices.Repeat([]string{fill("qwertyuiop", 2048)}, 31))
	cases = append(cases,
		// math: arithmetic, big numbers, sums, nesting, long texts.
		costCase{"1000!", "math", `\boxed{1000!}`, "1000!", nil},
		costCase{"1/1000!+2", "math", `\boxed{\frac{1}{1000!}+2}`, "2", nil},
		costCase{"100000!", "math", `\boxed{100000!}`, "1", nil},
		costCase{"tower", "math", `\boxed{2^{2^{2^{2^{2^{2}}}}}}`, "2", nil},
		costCase{"big power", "math", `\boxed{99999^{99999}}`, "1", nil},
		costCase{"sum 1/k^50", "math", `\boxed{\sum_{k=1}^{10000} \frac{1}{k^{50}}}`, "1", nil},
		costCase{"double sum", "math", `\boxed{\sum_{i=1}^{9999}\sum_{j=1}^{9999} ij}`, "1", nil},
		costCase{"long sum of terms", "math", `\boxed{` + fill("1+", n-10) + "1}", "1", nil},
		costCase{"long polynomial", "math", `\boxed{` + fill("x^{7}+", n-10) + "1}", "x", nil},
		costCase{"nested parens", "math", `\boxed{` + strings.Repeat("(", n/2-10) + "1" + strings.Repeat(")", n/2-10) + "}", "1", nil},
		costCase{"nested fracs", "math", `\boxed{` + strings.Repeat(`\frac{1}{`, n/20) + "2" + strings.Repeat("}", n/20) + "}", "1", nil},
		costCase{"chain of thought", "math", cot, "13", nil},
		costCase{"many answer phrases", "math", fill("the answer is 3 or ", n), "3", nil},
		costCase{"many dollars", "math", fill("$1$ and $", n), "1", nil},
		costCase{"long gold", "math", `\boxed{1}`, fill("1+", n-2) + "1", nil},
		costCase{"power tower with vars", "math", `\boxed{x^{x^{x^{x^{x^{x}}}}}}`, "x", nil},
		costCase{"many vars", "math", `\boxed{` + fill("a_{1}b_{2}c+", n-10) + "1}", "x", nil},
		// number and choice.
		costCase{"digits", "number", fill("9", n), "9", nil},
		costCase{"exponent", "number", "1e9999 2^99999 " + fill("9^9999 ", n-20), "1", nil},
		costCase{"options", "choice", fill("(A) ", n), "A", nil},
		// OCR: long against long, many references.
		costCase{"ocr long", "ocr", fill("abcdefgh", n), fill("hgfedcba", n), nil},
		costCase{"ocr near", "ocr", fill("abcdefgh", n), fill("abcdefgi", n), nil},
		costCase{"ocr many refs", "ocr", fill("poiuytrewq", 2048), string(refs), nil},
		// detection: the most boxes, optimal matching.
		costCase{"detection optimal", "detection", boxes, boxes, verifiers.Params{"matching": "optimal"}},
		costCase{"detection greedy", "detection", boxes, boxes, nil},
		// html and svg: long token and tag sets on both sides.
		costCase{"html tags", "html", fill("<a b='1'>x</a>", n), fill("<b c='2'>y</b>", n), nil},
		costCase{"svg tags", "svg", fill("<rect x='1'/>", n), fill("<circle r='2'/>", n), nil},
	)
	return cases
}

// detectionGrid is n boxes of one label on a 16-column grid.
func detectionGrid(n int) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		x, y := i%16*10, i/16*10
		fmt.Fprintf(&sb, `{"label":"a","bbox":[%d,%d,%d,%d]}`, x, y, x+9, y+9)
	}
	sb.WriteByte(']')
	return sb.String()
}

// TestWorstCaseCost runs every worst case and requires each call to take
// less than costMaxTime and allocate less than costMaxAlloc. Each is the
// minimum of three runs, so that a loaded machine's pauses do not count; a
// call that would take longer stops at its deadline (a verdict of 0 with
// Timeout) and is within bounds too.
func TestWorstCaseCost(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: -short")
	}
	var slowest time.Duration
	var slowestName string
	var most uint64
	var mostName string
	for _, c := range worstCases() {
		require.LessOrEqual(t, len(c.pred), costInputBytes, "%s/%s: input over bytes", c.verifier, c.name)
		require.LessOrEqual(t, len(c.ref), costInputBytes, "%s/%s: input over bytes", c.verifier, c.name)
		took, alloc, res, err := measure(c, 3)
		if err != nil {
			t.Errorf("%s/%s: %v", c.verifier, c.name, err)
			continue
		}
		if took > costMaxTime || alloc > costMaxAlloc {
			t.Errorf("%s/%s: %v and %d bytes allocated (score %v, reason %q), limits %v and %d",
				c.verifier, c.name, took, alloc, res.Score, res.Reason, costMaxTime, costMaxAlloc)
		}
		if took > slowest {
			slowest, slowestName = took, c.verifier+"/"+c.name
		}
		if alloc > most {
			most, mostName = alloc, c.verifier+"/"+c.name
		}
	}
	t.Logf("slowest call %v (%s); most memory %.1f MB (%s)", slowest, slowestName, float64(most)/(1<<20), mostName)
}

// measure runs c runs times and returns the least time and allocation.
func measure(c costCase, runs int) (time.Duration, uint64, verifiers.Result, error) {
	v, err := verifiers.New(c.verifier, c.params)
	if err != nil {
		return 0, 0, verifiers.Result{}, err
	}
	best, least := time.Duration(1<<62), uint64(1<<63)
	var res verifiers.Result
	var ms runtime.MemStats
	for range runs {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		start := time.Now()
		res, err = v.Verify(context.Background(), c.pred, c.ref)
		took := time.Since(start)
		runtime.ReadMemStats(&ms)
		if err != nil {
			return 0, 0, res, err
		}
		best, least = min(best, took), min(least, ms.TotalAlloc-before)
	}
	return best, least, res, nil
}

// TestDeadlineIsAnError checks every registered verifier: a call past its
// context's deadline is an error wrapping context.DeadlineExceeded, beside
// a Result with Timeout, score 0 and a reason, so that a trainer that
// ignores the flag cannot read the unjudged sample as a reward of 0; a
// cancelled context is an error too.
func TestDeadlineIsAnError(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	for _, name := range verifiers.Names() {
		pred := validRefs[name]
		if pred == "" {
			pred = "<think>a</think><answer>b</answer>"
		}
		res, err := verifiers.Default.Verify(expired, name, pred, validRefs[name], validParams[name])
		require.ErrorIs(t, err, context.DeadlineExceeded, "%s past its deadline: %+v", name, res)
		assert.True(t, strings.HasPrefix(err.Error(), "verifiers: "), "%s: %v", name, err)
		assert.True(t, res.Timeout, "%s past its deadline: %+v; want Timeout beside the error", name, res)
		assert.Equal(t, float64(0), res.Score, "%s past its deadline: %+v", name, res)
		assert.NotEmpty(t, res.Reason, "%s past its deadline: %+v", name, res)
		_, err = verifiers.Default.Verify(cancelled, name, pred, validRefs[name], validParams[name])
		assert.ErrorIs(t, err, context.Canceled, "%s with a cancelled context: %v; want context.Canceled", name, err)
	}
}
