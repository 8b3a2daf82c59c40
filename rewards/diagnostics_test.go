package rewards_test

import (
	"math"
	"sync"
	"testing"

	"github.com/rlpost/rlpost/rewards"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReflective(t *testing.T) {
	for in, want := range map[string]bool{
		"Wait, that is wrong.":     true,
		"let me re-check the sum":  true,
		"Let me RECHECK":           true,
		"I should re-evaluate":     true,
		"re-examine":               true,
		"we rethink it":            true,
		"a reevaluation":           true,
		"reexamine and reevaluate": true,
		"let me check again":       true,
		"Think  again.":            true,
		"try\nagain":               true,
		"verify the answer":        true,
		"not yet done":             true,
		"yet":                      true,
		"The answer is 4.":         false,
		"await the result":         false, // whole words only
		"a yeti":                   false,
		"verifying":                false,
		"check, again":             false, // the pair must be adjacent words
		"check-again":              false,
		"again check":              false,
		"rechecked":                false,
		"":                         false,
		"WAIT":                     true,
		"北京 wait":                  true,
		"\xffwait\xff":             true,
		"re-":                      false,
	} {
		if got := rewards.Reflective(in); got != want {
			t.Errorf("Reflective(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestDiagnostics(t *testing.T) {
	d := rewards.NewDiagnostics()
	obs := []rewards.Observation{
		{Source: "math", Reward: 1, Accuracy: 1, Format: 1, Correct: true, Length: 100, Response: "wait, yes"},
		{Source: "math", Reward: 0.2, Accuracy: 0, Format: 1, Length: 300, Truncated: true, Response: "hmm, let me verify"},
		{Source: "math", Reward: 0.5, Accuracy: 0.5, Format: 0.5, Correct: true, Length: 200, Response: "done"},
		{Source: "math", Failed: true, Reward: math.NaN()},
		{Source: "det", Reward: 0.3, Accuracy: 0.3, Length: 20, Response: "[1,2,3,4]"},
	}
	for _, o := range obs {
		require.NoError(t, d.Record(o))
	}
	s := d.Snapshot()
	require.Len(t, s, 2, "snapshot")
	require.Equal(t, "det", s[0].Source, "snapshot")
	require.Equal(t, "math", s[1].Source, "snapshot")
	m := s[1]
	want := rewards.SourceStats{
		Source: "math", Count: 3, Failed: 1,
		Reward: 1.7 / 3, Accuracy: 0.5, Format: 2.5 / 3, CorrectRate: 2.0 / 3,
		Length: 200, LengthCorrect: 150, LengthIncorrect: 300,
		TruncationRate: 1.0 / 3, Reflective: 2, ReflectionRatio: 2.0 / 3, ReflectionCorrect: 0.5,
	}
	assert.True(t, statsNear(m, want), "math stats got %+v want %+v", m, want)
	det := s[0]
	assert.Equal(t, 1, det.Count, "det stats %+v", det)
	assert.Equal(t, float64(0), det.LengthCorrect, "det stats %+v", det)
	assert.Equal(t, float64(20), det.LengthIncorrect, "det stats %+v", det)
	assert.Equal(t, float64(0), det.ReflectionCorrect, "det stats %+v", det)
	assert.Equal(t, float64(0), det.ReflectionRatio, "det stats %+v", det)
	metrics := rewards.Metrics("train", s)
	assert.Len(t, metrics, 28, "metrics")
	assert.Equal(t, 2.0/3, metrics["train/math/reflection_ratio"], "metrics")
	assert.Equal(t, float64(1), metrics["train/det/count"], "metrics")
	if f := d.Flush(); len(f) != 2 {
		t.Errorf("Flush returned %d sources", len(f))
	}
	if s := d.Snapshot(); len(s) != 0 {
		t.Errorf("after Flush: %+v", s)
	}
	for _, bad := range []rewards.Observation{{Reward: math.NaN()}, {Format: math.Inf(1)}, {Length: -1}} {
		assert.Error(t, d.Record(bad), "Record(%+v) accepted", bad)
	}
	d.Reset()
	var zero rewards.Diagnostics
	err := zero.Record(obs[0])
	require.NoError(t, err, "zero Diagnostics")
	assert.Len(t, zero.Snapshot(), 1, "zero Diagnostics")
}

func statsNear(a, b rewards.SourceStats) bool {
	f := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	return a.Source == b.Source && a.Count == b.Count && a.Failed == b.Failed && a.Reflective == b.Reflective &&
		f(a.Reward, b.Reward) && f(a.Accuracy, b.Accuracy) && f(a.Format, b.Format) && f(a.CorrectRate, b.CorrectRate) &&
		f(a.Length, b.Length) && f(a.LengthCorrect, b.LengthCorrect) && f(a.LengthIncorrect, b.LengthIncorrect) &&
		f(a.TruncationRate, b.TruncationRate) && f(a.ReflectionRatio, b.ReflectionRatio) && f(a.ReflectionCorrect, b.ReflectionCorrect)
}

// TestDiagnosticsConcurrent records from many goroutines while others
// flush; every observation must land in exactly one flush.
func TestDiagnosticsConcurrent(t *testing.T) {
	d := rewards.NewDiagnostics()
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_ = d.Record(rewards.Observation{Source: string(rune('a' + w%3)), Reward: 1, Length: i})
			}
		}()
	}
	total := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for _, s := range d.Flush() {
			total += s.Count
		}
	}
	assert.Equal(t, writers*each, total, "flushed observations")
}
