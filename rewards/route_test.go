package rewards_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/require"
)

func TestRouteSpecJSON(t *testing.T) {
	// V-Triune's reward_model carries answer and ground_truth beside the
	// routing fields; absent ratios take the defaults.
	var s rewards.RouteSpec
	in := `{"data_source": "coco", "verifier": "detection", "verifier_parm": {"progress": 0.3}, "ground_truth": "[]", "answer": ""}`
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	if s.DataSource != "coco" || s.Verifier != "detection" || s.AccuracyRatio != 1 || s.FormatRatio != 0.1 || s.VerifierParm["progress"] != 0.3 {
		t.Errorf("decoded %+v", s)
	}
	if err := json.Unmarshal([]byte(`{"verifier": "choice", "accuracy_ratio": 0.5, "format_ratio": 0}`), &s); err != nil || s.AccuracyRatio != 0.5 || s.FormatRatio != 0 || s.DataSource != "" {
		t.Errorf("decoded %+v, %v", s, err)
	}
	out, err := json.Marshal(rewards.DefaultRouteSpec())
	if err != nil || string(out) != `{"data_source":"","verifier":"","verifier_parm":null,"accuracy_ratio":1,"format_ratio":0.1}` {
		t.Errorf("encoded %s, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"accuracy_ratio": "1"}`), &s); err == nil {
		t.Errorf("string ratio accepted")
	}
}

func TestRouteSpecValidate(t *testing.T) {
	for _, s := range []rewards.RouteSpec{
		{Verifier: "choice"}, // both ratios 0
		{Verifier: "choice", AccuracyRatio: -1, FormatRatio: 1},
		{Verifier: "choice", AccuracyRatio: math.NaN(), FormatRatio: 1},
		{Verifier: "choice", AccuracyRatio: math.Inf(1), FormatRatio: 1},
		{AccuracyRatio: 1}, // no verifier
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := (rewards.RouteSpec{FormatRatio: 1}).Validate(); err != nil {
		t.Errorf("format-only spec: %v", err)
	}
}

func mkSample(source, verifier, response, reference string, p verifiers.Params) rewards.Sample {
	spec := rewards.DefaultRouteSpec()
	spec.DataSource, spec.Verifier, spec.VerifierParm = source, verifier, p
	return rewards.Sample{Spec: spec, Response: response, Reference: reference, Length: len(response)}
}

func TestRouteMixedBatch(t *testing.T) {
	good := "<think>ok</think><answer>B</answer>"
	samples := []rewards.Sample{
		mkSample("mmk12", "choice", good, "B", nil),                                       // acc 1, format 1
		mkSample("mmk12", "choice", "<answer>C</answer>", "B", nil),                       // acc 0, format 0.5
		mkSample("count", "number", "<think>3 + 4</think><answer>7</answer>", "7", nil),   // acc 1, format 1
		mkSample("coco", "iou", "<answer>[0,0,10,5]</answer>", "[0,0,10,10]", nil),        // acc 0.5, format 0.5
		mkSample("coco", "nonexistent", good, "B", nil),                                   // unknown verifier
		mkSample("count", "number", good, "no number", nil),                               // bad reference
		mkSample("mmk12", "choice", good, "B", verifiers.Params{"bogus": 1}),              // bad parameter
		{Spec: rewards.RouteSpec{Verifier: "choice"}, Response: good, Reference: "B"},     // zero ratios
		{Spec: rewards.RouteSpec{DataSource: "fmt", FormatRatio: 1}, Response: "<think>"}, // format only
	}
	wantReward := []float64{1.1, 0.05, 1.1, 0.55, 0, 0, 0, 0, 0.25}
	wantErr := []bool{false, false, false, false, true, true, true, true, false}
	for _, workers := range []int{1, 3, 64} {
		diag := rewards.NewDiagnostics()
		r := rewards.Router{Workers: workers, Diagnostics: diag}
		out := make([]rewards.Outcome, len(samples))
		require.NoError(t, r.Route(context.Background(), out, samples))
		for i, o := range out {
			if (o.Err != nil) != wantErr[i] || !near(o.Reward, wantReward[i]) {
				t.Errorf("workers %d, sample %d: %+v, want reward %v, error %v", workers, i, o, wantReward[i], wantErr[i])
			}
			if o.Err != nil && !strings.Contains(o.Err.Error(), "samples[") {
				t.Errorf("sample %d: error %q does not say which sample", i, o.Err)
			}
		}
		stats := diag.Snapshot()
		if len(stats) != 5 || stats[0].Source != "" || stats[1].Source != "coco" {
			t.Fatalf("sources %+v", stats)
		}
		coco := stats[1]
		if coco.Count != 1 || coco.Failed != 1 || !near(coco.Accuracy, 0.5) {
			t.Errorf("coco stats %+v", coco)
		}
		mmk := stats[4]
		if mmk.Count != 2 || mmk.Failed != 1 || mmk.CorrectRate != 0.5 || !near(mmk.Format, 0.75) {
			t.Errorf("mmk12 stats %+v", mmk)
		}
	}
	if err := (&rewards.Router{}).Route(context.Background(), make([]rewards.Outcome, 1), samples); err == nil {
		t.Errorf("short dst accepted")
	}
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
	if !near(out[0].Reward, (0.9+1)/2) || out[0].Format != 1 {
		t.Errorf("outcome %+v", out[0])
	}
	// The Default registry does not know rmae.
	out[0] = rewards.Outcome{}
	if err := (&rewards.Router{}).Route(context.Background(), out, []rewards.Sample{s}); err != nil || !errors.Is(out[0].Err, verifiers.ErrUnknown) {
		t.Errorf("unknown key: %v", out[0].Err)
	}
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
	if err := (&rewards.Router{Registry: &reg, Workers: 2}).Route(context.Background(), out, samples); err != nil {
		t.Fatal(err)
	}
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
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("Route = %v after %v", err, time.Since(start))
	}
	if n := started.Load(); n > 8 {
		t.Errorf("%d samples started after cancellation", n)
	}
	for i, o := range out {
		if !errors.Is(o.Err, context.Canceled) {
			t.Fatalf("sample %d: %+v", i, o)
		}
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
		if err := json.Unmarshal([]byte(in), &s); !errors.Is(err, tensor.ErrRange) {
			t.Errorf("%s: %v, want ErrRange", in, err)
		}
	}
	spec := rewards.DefaultRouteSpec()
	spec.Verifier = "math"
	for _, bad := range []float64{math.NaN(), math.Inf(1), -1, math.MaxFloat64} {
		spec.AccuracyRatio, spec.FormatRatio = bad, math.MaxFloat64
		if err := spec.Validate(); err == nil {
			t.Errorf("ratios %v, %v accepted", bad, math.MaxFloat64)
		}
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
	if m["train/m/timeouts"] != 1 || m["train/m/limits"] != 1 {
		t.Errorf("metrics %v", m)
	}
}

// A failing sample's error names it by index, and by data source only when
// it has one: no empty "()".
func TestRouteErrorNamesTheSample(t *testing.T) {
	samples := []rewards.Sample{
		mkSample("", "math", "<answer>1</answer>", `\frac{`, nil),
		mkSample("gsm8k", "math", "<answer>1</answer>", "}}}", nil),
	}
	out := make([]rewards.Outcome, len(samples))
	if err := (&rewards.Router{}).Route(context.Background(), out, samples); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"rewards: samples[0]: verifiers: math: ref: syntax error: ", "rewards: samples[1] (gsm8k): verifiers: math: ref: syntax error: "} {
		if err := out[i].Err; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, verifiers.ErrSyntax) || strings.Contains(err.Error(), "()") {
			t.Errorf("sample %d: %v, want an ErrSyntax error starting %q", i, err, want)
		}
	}
}
