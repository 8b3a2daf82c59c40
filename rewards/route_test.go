package rewards_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRouteSpecJSON(t *testing.T) {
	// V-Triune's reward_model carries answer and ground_truth beside the
	// routing fields; absent ratios take the defaults.
	var s rewards.RouteSpec
	in := `{"data_source": "coco", "verifier": "detection", "verifier_parm": {"progress": 0.3}, "ground_truth": "[]", "answer": ""}`
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	assert.Equal(t, "coco", s.DataSource, "decoded %+v", s)
	assert.Equal(t, "detection", s.Verifier, "decoded %+v", s)
	assert.Equal(t, float64(1), s.AccuracyRatio, "decoded %+v", s)
	assert.Equal(t, 0.1, s.FormatRatio, "decoded %+v", s)
	assert.Equal(t, 0.3, s.VerifierParm["progress"], "decoded %+v", s)
	err := json.Unmarshal([]byte(`{"verifier": "choice", "accuracy_ratio": 0.5, "format_ratio": 0}`), &s)
	require.NoError(t, err, "decoded %+v", s)
	assert.Equal(t, 0.5, s.AccuracyRatio, "decoded %+v", s)
	assert.Equal(t, float64(0), s.FormatRatio, "decoded %+v", s)
	assert.Equal(t, "", s.DataSource, "decoded %+v", s)
	out, err := json.Marshal(rewards.DefaultRouteSpec())
	require.NoError(t, err, "encoded %s", out)
	assert.Equal(t, `{"data_source":"","verifier":"","verifier_parm":null,"accuracy_ratio":1,"format_ratio":0.1}`, string(out), "encoded %s", out)
	assert.Error(t, json.Unmarshal([]byte(`{"accuracy_ratio": "1"}`), &s), "string ratio accepted")
}

func TestRouteSpecValidate(t *testing.T) {
	for _, s := range []rewards.RouteSpec{
		{Verifier: "choice"}, // both ratios 0
		{Verifier: "choice", AccuracyRatio: -1, FormatRatio: 1},
		{Verifier: "choice", AccuracyRatio: math.NaN(), FormatRatio: 1},
		{Verifier: "choice", AccuracyRatio: math.Inf(1), FormatRatio: 1},
		{AccuracyRatio: 1}, // no verifier
	} {
		assert.Error(t, s.Validate(), "%+v accepted", s)
	}
	assert.NoError(t, (rewards.RouteSpec{FormatRatio: 1}).Validate(), "format-only spec")
}

func mkSample(source, verifier, response, reference string, p verifiers.Params) rewards.Sample {
	spec := rewards.DefaultRouteSpec()
	spec.DataSource, spec.Verifier, spec.VerifierParm = source, verifier, p
	return rewards.Sample{Spec: spec, Response: response, Reference: reference, Length: len(response)}
}

func TestRouteMixedBatch(t *testing.T) {
	good := "<think>ok</think><answer>B</answer>"
	samples := []rewards.Sample{
		mkSample("mmk12", "choice", good, "B", nil),                                        // acc 1, format 1
		mkSample("mmk12", "choice", "<answer>C</answer>", "B", nil),                        // acc 0, format 0.5
		mkSample("count", "number", "<think>3 + 4</think><answer>7</answer>", "7", nil),    // acc 1, format 1
		mkSample("coco", "iou", "<answer>[0,0,10,5]</answer>", "[0,0,10,10]", nil),         // acc 0.5, format 0.5
		mkSample("coco", "nonexistent", good, "B", nil),                                    // unknown verifier
		mkSample("count", "number", good, "no number", nil),                                // bad reference
		mkSample("mmk12", "choice", good, "B", verifiers.Params{"bogus": 1}),               // bad parameter
		{Spec: rewards.RouteSpec{Verifier: "choice"}, Response: good, Reference: "B"},      // zero ratios
		{Spec: rewards.RouteSpec{DataSource: "fmt", FormatRatio: 1}, Response: "<think>x"}, // format only
	}
	wantReward := []float64{1.1, 0.05, 1.1, 0.55, 0, 0, 0, 0, 0.25}
	wantErr := []bool{false, false, false, false, true, true, true, true, false}
	for _, workers := range []int{1, 3, 64} {
		diag := rewards.NewDiagnostics()
		r := rewards.Router{Workers: workers, Diagnostics: diag}
		out := make([]rewards.Outcome, len(samples))
		require.NoError(t, r.Route(context.Background(), out, samples))
		for i, o := range out {
			assert.Equal(t, wantErr[i], (o.Err != nil), "workers %d, sample %d: %+v, want reward %v, error", workers, i, o, wantReward[i])
			assert.True(t, near(o.Reward, wantReward[i]), "workers %d, sample %d: %+v, want reward %v, error", workers, i, o, wantReward[i])
			if o.Err != nil && !strings.Contains(o.Err.Error(), "samples[") {
				t.Errorf("sample %d: error %q does not say which sample", i, o.Err)
			}
		}
		stats := diag.Snapshot()
		require.Len(t, stats, 5, "sources")
		require.Equal(t, "", stats[0].Source, "sources")
		require.Equal(t, "coco", stats[1].Source, "sources")
		coco := stats[1]
		assert.Equal(t, 1, coco.Count, "coco stats %+v", coco)
		assert.Equal(t, 1, coco.Failed, "coco stats %+v", coco)
		assert.True(t, near(coco.Accuracy, 0.5), "coco stats %+v", coco)
		mmk := stats[4]
		assert.Equal(t, 2, mmk.Count, "mmk12 stats %+v", mmk)
		assert.Equal(t, 1, mmk.Failed, "mmk12 stats %+v", mmk)
		assert.Equal(t, 0.5, mmk.CorrectRate, "mmk12 stats %+v", mmk)
		assert.True(t, near(mmk.Format, 0.75), "mmk12 stats %+v", mmk)
	}
	assert.Error(t, (&rewards.Router{}).Route(context.Background(), make([]rewards.Outcome, 1), samples), "short dst accepted")
}

func TestRouteCustomFormatAndRegistry(t *testing.T) {
	var reg verifiers.Registry
	require.NoError(t, reg.Register("rmae", rewards.RMAEVerifier))
	format, err := verifiers.New("format", nil)
	require.NoError(t, err)
	r := rewards.Router{Registry: &reg, Format: format}
	s := mkSample("count", "rmae", "<think>hm</think><answer>45</answer>", "50", nil)
	s.Spec.AccuracyRatio, s.Spec.FormatRatio = 0.5, 0.5
	out := make([]rewards.Outcome, 1)
	if err := r.Route(context.Background(), out, []rewards.Sample{s}); err != nil || out[0].Err != nil {
		t.Fatal(err, out[0].Err)
	}
	assert.True(t, near(out[0].Reward, (0.9+1)/2), "outcome %+v", out[0])
	assert.Equal(t, float64(1), out[0].Format, "outcome %+v", out[0])
	// The Default registry does not know rmae.
	out[0] = rewards.Outcome{}
	err = (&rewards.Router{}).Route(context.Background(), out, []rewards.Sample{s})
	require.NoError(t, err, "unknown key")
	assert.ErrorIs(t, out[0].Err, verifiers.ErrUnknown, "unknown key")
}

func TestRoutePanicAndScoreChecks(t *testing.T) {
	var reg verifiers.Registry
	_ = reg.Register("panics", verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		panic("boom")
	})))
	_ = reg.Register("two", verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Score: 2}, nil
	})))
	samples := []rewards.Sample{mkSample("a", "panics", "", "", nil), mkSample("a", "two", "", "", nil)}
	out := make([]rewards.Outcome, 2)
	badFormat := verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Score: -1}, nil
	})
	require.NoError(t, (&rewards.Router{Registry: &reg, Workers: 2}).Route(context.Background(), out, samples))
	if out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "panicked") || out[1].Err == nil {
		t.Errorf("outcomes %+v", out)
	}
	s := rewards.Sample{Spec: rewards.RouteSpec{FormatRatio: 1}}
	if err := (&rewards.Router{Format: badFormat}).Route(context.Background(), out[:1], []rewards.Sample{s}); err != nil || out[0].Err == nil {
		t.Errorf("format score −1 accepted: %+v", out[0])
	}
}

func TestRouteCancellation(t *testing.T) {
	var reg verifiers.Registry
	var started atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	_ = reg.Register("slow", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, _, _ string) (verifiers.Result, error) {
		if started.Add(1) == 4 {
			cancel()
		}
		<-ctx.Done()
		return verifiers.Result{}, ctx.Err()
	})))
	samples := make([]rewards.Sample, 100)
	for i := range samples {
		samples[i] = mkSample("s", "slow", "", "", nil)
	}
	out := make([]rewards.Outcome, len(samples))
	diag := rewards.NewDiagnostics()
	start := time.Now()
	err := (&rewards.Router{Registry: &reg, Workers: 4, Diagnostics: diag}).Route(ctx, out, samples)
	require.ErrorIs(t, err, context.Canceled, "Route")
	require.LessOrEqual(t, time.Since(start), 5*time.Second, "Route")
	if n := started.Load(); n > 8 {
		t.Errorf("%d samples started after cancellation", n)
	}
	for i, o := range out {
		require.ErrorIs(t, o.Err, context.Canceled, "sample %d: %+v", i, o)
	}
	if s := diag.Snapshot(); len(s) != 0 {
		t.Errorf("cancelled samples recorded: %+v", s)
	}
}

func TestRouteTimeout(t *testing.T) {
	var reg verifiers.Registry
	_ = reg.Register("judge", rewards.JudgeVerifier(&rewardstest.FakeJudge{Delay: time.Hour}, 0))
	out := make([]rewards.Outcome, 2)
	samples := []rewards.Sample{mkSample("j", "judge", "a", "a", nil), mkSample("j", "judge", "b", "b", nil)}
	diag := rewards.NewDiagnostics()
	r := rewards.Router{Registry: &reg, Timeout: 10 * time.Millisecond, Diagnostics: diag}
	require.NoError(t, r.Route(context.Background(), out, samples))
	for _, o := range out {
		if o.Err != nil || !o.Timeout || o.Reward != 0 || o.Reason == "" {
			t.Errorf("outcome %+v, want a timeout verdict of 0", o)
		}
	}
	// A per-sample timeout is a verdict of 0: in the means and counted.
	if s := diag.Snapshot(); len(s) != 1 || s[0].Count != 2 || s[0].Timeouts != 2 || s[0].Failed != 0 {
		t.Errorf("diagnostics %+v", s)
	}
}

func TestRouteSpecRejectsOverflowingRatios(t *testing.T) {
	var s rewards.RouteSpec
	for _, in := range []string{
		`{"verifier": "math", "accuracy_ratio": 1e308, "format_ratio": 1e308}`,
		`{"verifier": "math", "accuracy_ratio": -1}`,
		`{"verifier": "math", "format_ratio": -0.1}`,
	} {
		err := json.Unmarshal([]byte(in), &s)
		assert.ErrorIs(t, err, tensor.ErrRange, "%s: %v, want ErrRange", in, err)
	}
	spec := rewards.DefaultRouteSpec()
	spec.Verifier = "math"
	for _, bad := range []float64{math.NaN(), math.Inf(1), -1, math.MaxFloat64} {
		spec.AccuracyRatio, spec.FormatRatio = bad, math.MaxFloat64
		assert.Error(t, spec.Validate(), "ratios %v, %v accepted", bad, math.MaxFloat64)
	}
}

// TestRouteCountsVerifierTimeouts checks that a verifier's own timeout
// verdict (math's budget, say) and a limit hit are counted: in the means
// as the 0 they scored and in SourceStats.Timeouts and Limits, never
// dropped.
func TestRouteCountsVerifierTimeouts(t *testing.T) {
	var reg verifiers.Registry
	_ = reg.Register("slow", verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Timeout: true, Reason: "timeout: budget"}, nil
	})))
	_ = reg.Register("fast", verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Score: 1, Correct: true}, nil
	})))
	_ = reg.Register("big", verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Reason: "limit: too long"}, nil
	})))
	samples := []rewards.Sample{mkSample("m", "slow", "a", "a", nil), mkSample("m", "fast", "a", "a", nil), mkSample("m", "big", "a", "a", nil)}
	for i := range samples {
		samples[i].Spec.FormatRatio = 0
	}
	out := make([]rewards.Outcome, 3)
	diag := rewards.NewDiagnostics()
	r := rewards.Router{Registry: &reg, Diagnostics: diag}
	require.NoError(t, r.Route(context.Background(), out, samples))
	if o := out[0]; o.Err != nil || !o.Timeout || o.Reward != 0 || o.Reason == "" {
		t.Errorf("timed-out sample: %+v", o)
	}
	s := diag.Snapshot()
	if len(s) != 1 || s[0].Count != 3 || s[0].Timeouts != 1 || s[0].Limits != 1 || s[0].Failed != 0 || math.Abs(s[0].Accuracy-1.0/3) > 1e-12 {
		t.Errorf("diagnostics %+v; want all samples in the mean, one timeout, one limit", s)
	}
	m := rewards.Metrics("train", s)
	assert.Equal(t, float64(1), m["train/m/timeouts"], "metrics %v", m)
	assert.Equal(t, float64(1), m["train/m/limits"], "metrics %v", m)
}

// A failing sample's error names it by index, and by data source only when
// it has one: no empty "()".
func TestRouteErrorNamesTheSample(t *testing.T) {
	samples := []rewards.Sample{
		mkSample("", "math", "<answer>1</answer>", `\frac{`, nil),
		mkSample("gsm8k", "math", "<answer>1</answer>", "}}}", nil),
	}
	out := make([]rewards.Outcome, len(samples))
	require.NoError(t, (&rewards.Router{}).Route(context.Background(), out, samples))
	for i, want := range []string{"rewards: samples[0]: verifiers: math: ref: syntax error: ", "rewards: samples[1] (gsm8k): verifiers: math: ref: syntax error: "} {
		err := out[i].Err
		require.Error(t, err, "sample %d, want an ErrSyntax error starting %q", i, want)
		assert.True(t, strings.HasPrefix(err.Error(), want), "sample %d, want an ErrSyntax error starting %q", i, want)
		require.ErrorIs(t, err, verifiers.ErrSyntax, "sample %d, want an ErrSyntax error starting %q", i, want)
		assert.NotContains(t, err.Error(), "()", "sample %d, want an ErrSyntax error starting %q", i, want)
	}
}
