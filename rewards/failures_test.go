package rewards_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/testkit/apitest"
	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailureModes walks every exported function of package rewards that
// returns an error with bad input, and checks errors.Is for the documented
// kinds, errors.As to *tensor.ArgError naming the argument for input
// errors, the prefix "rewards: " and that the text shows every kind the
// error wraps.
func TestFailureModes(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tracker, err := rewards.NewRepetitionTracker(rewards.VAGENRepetitionConfig())
	require.NoError(t, err)
	fixed, err := rewards.NewFixedIoU(0.5)
	require.NoError(t, err)
	boom := errors.New("boom")
	judge := &rewardstest.FakeJudge{}
	type failure struct {
		call  func() error
		kinds []error
		arg   string // "" when the error is not about an argument
	}
	cases := map[string]failure{
		"AskJudge":          {func() error { _, err := rewards.AskJudge(ctx, judge, rewards.JudgeRequest{}, -1); return err }, []error{tensor.ErrRange}, "timeout"},
		"Composite.Combine": {func() error { _, err := rewards.AVATARStage1().Combine(1); return err }, []error{tensor.ErrShape}, "values"},
		"Composite.CombineNamed": {func() error {
			_, err := rewards.AVATARStage1().CombineNamed(map[string]float64{"format": 1})
			return err
		}, []error{tensor.ErrShape}, "values"},
		"Composite.Validate": {func() error { return rewards.Composite{}.Validate() }, []error{tensor.ErrEmpty}, "Composite"},
		"Diagnostics.Record": {func() error { return rewards.NewDiagnostics().Record(rewards.Observation{Length: -1}) }, []error{tensor.ErrRange}, "Observation.Length"},
		"FixedIoU.Record":    {func() error { return fixed.Record("s", 2) }, []error{tensor.ErrRange}, "ious"},
		"FixedIoU.RecordBox": {func() error { return fixed.RecordBox("s", "[0,0,1,1]", "no box") }, []error{verifiers.ErrSyntax}, "reference"},
		"JudgeTurn": {func() error {
			_, err := rewards.JudgeTurn(cancelled, judge, 0, "<observation>a box</observation>", "", "")
			return err
		}, []error{rewards.ErrJudge, context.Canceled}, ""},
		"MeanTokenLikelihood": {func() error { _, err := rewards.MeanTokenLikelihood([]float64{}); return err }, []error{tensor.ErrEmpty}, "logp"},
		"NewFixedIoU":         {func() error { _, err := rewards.NewFixedIoU(2); return err }, []error{tensor.ErrRange}, "threshold"},
		"NewRepetitionTracker": {func() error {
			_, err := rewards.NewRepetitionTracker(rewards.RepetitionConfig{})
			return err
		}, []error{tensor.ErrRange}, "RepetitionConfig.TopK"},
		"ParseVerdict":               {func() error { _, err := rewards.ParseVerdict("maybe"); return err }, []error{rewards.ErrVerdict}, ""},
		"RMAE":                       {func() error { _, err := rewards.RMAE(1, 0); return err }, []error{tensor.ErrRange}, "gold"},
		"RMAEVerifier":               {func() error { _, err := rewards.RMAEVerifier(verifiers.Params{"extract": "slot"}); return err }, []error{verifiers.ErrParam}, `params["extract"]`},
		"RepetitionConfig.Validate":  {func() error { return rewards.RepetitionConfig{}.Validate() }, []error{tensor.ErrRange}, "RepetitionConfig.TopK"},
		"RepetitionTracker.Penalty":  {func() error { _, _, err := tracker.Penalty("a", 2); return err }, []error{tensor.ErrRange}, "f1"},
		"RepetitionTracker.Snapshot": {func() error { return tracker.Snapshot(failingWriter{boom}) }, []error{boom}, ""},
		"RestoreRepetitionTracker": {func() error {
			_, err := rewards.RestoreRepetitionTracker(bytes.NewReader([]byte(`{"format": "other"}`)))
			return err
		}, []error{rewards.ErrRepetitionSnapshot}, ""},
		"RouteSpec.UnmarshalJSON": {func() error { var s rewards.RouteSpec; return s.UnmarshalJSON([]byte(`{"accuracy_ratio": -1}`)) }, []error{tensor.ErrRange}, "accuracy_ratio"},
		"RouteSpec.Validate":      {func() error { return rewards.RouteSpec{AccuracyRatio: -1}.Validate() }, []error{tensor.ErrRange}, "accuracy_ratio"},
		"Router.Route": {func() error {
			return (&rewards.Router{}).Route(ctx, nil, make([]rewards.Sample, 1))
		}, []error{tensor.ErrShape}, "dst"},
		"ScoreStructured":     {func() error { _, err := rewards.ScoreStructured(tracker, "a", "{}", "[1]"); return err }, []error{verifiers.ErrSyntax}, "truth"},
		"SelfReward":          {func() error { _, err := rewards.SelfReward(make([]float64, 1), []string{"a", "b"}, nil); return err }, []error{tensor.ErrShape}, "dst"},
		"TurnConfig.Validate": {func() error { return rewards.TurnConfig{BetaG: math.NaN()}.Validate() }, []error{tensor.ErrNonFinite}, "TurnConfig.BetaG"},
		"TurnRewards": {func() error {
			return rewards.TurnRewards(make([]float64, 1), make([]rewards.Turn, 2), rewards.VAGENTurnConfig())
		}, []error{tensor.ErrShape}, "dst"},
		"VerdictJudge.Judge": {func() error {
			_, err := rewards.VerdictJudge(func(context.Context, rewards.JudgeRequest) (string, error) { return "perhaps", nil }).Judge(ctx, rewards.JudgeRequest{})
			return err
		}, []error{rewards.ErrVerdict}, ""},
	}
	kinds := []error{tensor.ErrShape, tensor.ErrNonFinite, tensor.ErrMask, tensor.ErrEmpty, tensor.ErrRange,
		verifiers.ErrParam, verifiers.ErrSyntax, verifiers.ErrTooLarge, rewards.ErrJudge, rewards.ErrVerdict, rewards.ErrRepetitionSnapshot}
	// Validate methods return the bare *tensor.ArgError for their caller
	// to wrap, as throughout the module.
	bare := map[string]bool{"Composite.Validate": true, "RepetitionConfig.Validate": true, "RouteSpec.Validate": true, "TurnConfig.Validate": true}
	for name, f := range cases {
		err := f.call()
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		for _, k := range f.kinds {
			assert.ErrorIs(t, err, k, "%s: %q does not wrap %q", name, err, k)
		}
		for _, k := range kinds {
			if errors.Is(err, k) && !strings.Contains(err.Error(), k.Error()) {
				t.Errorf("%s: %q wraps %q but does not say so", name, err, k)
			}
		}
		if strings.Contains(err.Error(), "out of range") != errors.Is(err, tensor.ErrRange) {
			t.Errorf("%s: %q: the text and errors.Is(tensor.ErrRange) disagree", name, err)
		}
		var ae *tensor.ArgError
		if f.arg != "" && (!errors.As(err, &ae) || ae.Arg != f.arg) {
			t.Errorf("%s: %q is not a *tensor.ArgError for %s", name, err, f.arg)
		}
		if !bare[name] && !strings.HasPrefix(err.Error(), "rewards: ") {
			t.Errorf("%s: %q does not start with \"rewards: \"", name, err)
		}
	}
	names, err := apitest.ErrorFuncs(".")
	require.NoError(t, err)
	exempt := map[string]string{
		"JudgeFunc.Judge": "returns what the caller's function returns",
		"FakeJudge.Judge": "a deprecated test double; rewardstest.FakeJudge is tested in its package",
	}
	for _, n := range names {
		_, ok := cases[n]
		if _, ex := exempt[n]; !ok && !ex {
			t.Errorf("%s returns an error but has no failure case", n)
		}
	}
	for n := range cases {
		assert.True(t, slices.Contains(names, n), "failure case for %s, which is not an exported function returning an error", n)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
