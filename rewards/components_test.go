package rewards_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

func TestFormat(t *testing.T) {
	for in, want := range map[string]float64{
		"<think>a</think><answer>b</answer>":   1,
		"<think>a</think><answer>b</answer>x":  -1,
		"<answer>b</answer>":                   -1,
		"":                                     -1,
		" <think></think>\n<answer>4</answer>": 1,
	} {
		if got := rewards.Format(in); got != want {
			t.Errorf("Format(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRMAE(t *testing.T) {
	for _, c := range []struct{ pred, gold, want float64 }{
		{10, 10, 1},
		{9, 10, 0.9},
		{11, 10, 0.9},
		{25, 10, 0},  // capped at 0
		{-10, 10, 0}, // |−20|/10 > 1
		{-9, -10, 0.9},
		{0, 10, 0},
		{math.Inf(1), 10, 0},
	} {
		got, err := rewards.RMAE(c.pred, c.gold)
		require.NoError(t, err, "RMAE(%v, %v) = %v; want %v", c.pred, c.gold, got, c.want)
		assert.True(t, near(got, c.want), "RMAE(%v, %v) = %v; want %v", c.pred, c.gold, got, c.want)
	}
	for _, c := range [][2]float64{{1, 0}, {1, math.NaN()}, {math.NaN(), 1}, {1, math.Inf(-1)}} {
		_, err := rewards.RMAE(c[0], c[1])
		assert.Error(t, err, "RMAE(%v, %v) accepted", c[0], c[1])
	}
	ctx := context.Background()
	v, err := rewards.RMAEVerifier(nil)
	require.NoError(t, err)
	res, err := v.Verify(ctx, "<answer>about 45 people</answer>", "50")
	require.NoError(t, err, "RMAEVerifier = %+v", res)
	assert.True(t, near(res.Score, 0.9), "RMAEVerifier = %+v", res)
	assert.False(t, res.Correct, "RMAEVerifier = %+v", res)
	assert.Equal(t, "45", res.Parsed, "RMAEVerifier = %+v", res)
	res, _ = v.Verify(ctx, "<answer>"+strings.Repeat("9", 400)+"</answer>", "50")
	assert.Equal(t, float64(0), res.Score, "RMAEVerifier beyond float64 = %+v, want 0", res)
	_, err = v.Verify(ctx, "1", "0")
	require.ErrorIs(t, err, tensor.ErrRange, "RMAEVerifier with gold 0, want tensor.ErrRange prefixed \"rewards: rmae: \"")
	assert.True(t, strings.HasPrefix(err.Error(), "rewards: rmae: "), "RMAEVerifier with gold 0, want tensor.ErrRange prefixed \"rewards: rmae: \"")
	_, err = v.Verify(ctx, "1", "none")
	assert.ErrorIs(t, err, verifiers.ErrSyntax, "RMAEVerifier with no number in the reference: %v, want ErrSyntax", err)
	_, err = rewards.RMAEVerifier(verifiers.Params{"extract": "slot"})
	assert.ErrorIs(t, err, verifiers.ErrParam, "RMAEVerifier(extract slot) = %v, want ErrParam", err)
}

func TestSelfReward(t *testing.T) {
	for _, c := range []struct {
		name    string
		answers []string
		conf    []float64
		want    []float64
		best    int
	}{
		{"majority", []string{"A", "B", "A", "C"}, nil, []float64{1, 0, 1, 0}, 0},
		// A and B tie at two votes; the most confident tied response says B.
		{"tie by confidence", []string{"A", "B", "A", "B"}, []float64{0.5, 0.4, 0.6, 0.9}, []float64{0, 1, 0, 1}, 3},
		{"tie without confidence: earliest", []string{"B", "A", "A", "B"}, nil, []float64{1, 0, 0, 1}, 0},
		// The most confident response overall (C) is not tied for the most votes.
		{"confidence only among tied", []string{"A", "A", "C", "B", "B"}, []float64{0.1, 0.1, 0.99, 0.2, 0.1}, []float64{0, 0, 0, 1, 1}, 3},
		{"empty answers do not vote", []string{"", "", "", "A"}, nil, []float64{0, 0, 0, 1}, 3},
		{"no answers", []string{"", ""}, nil, []float64{0, 0}, -1},
		{"empty group", nil, nil, []float64{}, -1},
	} {
		dst := make([]float64, len(c.answers))
		for i := range dst {
			dst[i] = 7 // must be overwritten
		}
		best, err := rewards.SelfReward(dst, c.answers, c.conf)
		require.NoError(t, err, "%s: best", c.name)
		assert.Equal(t, c.best, best, "%s: best", c.name)
		for i := range dst {
			if dst[i] != c.want[i] {
				t.Errorf("%s: dst = %v, want %v", c.name, dst, c.want)
				break
			}
		}
	}
	_, err := rewards.SelfReward(make([]float64, 1), []string{"a", "b"}, nil)
	assert.ErrorIs(t, err, tensor.ErrShape, "short dst")
	_, err = rewards.SelfReward(make([]float64, 2), []string{"a", "b"}, []float64{1})
	assert.ErrorIs(t, err, tensor.ErrShape, "short confidence")
	_, err = rewards.SelfReward(make([]float64, 2), []string{"a", "b"}, []float64{1, math.NaN()})
	assert.ErrorIs(t, err, tensor.ErrNonFinite, "NaN confidence")
}

func TestMeanTokenLikelihood(t *testing.T) {
	got, err := rewards.MeanTokenLikelihood([]float32{0, float32(math.Log(0.5))})
	require.NoError(t, err, "MeanTokenLikelihood: want 0.75")
	assert.InDelta(t, 0.75, got, 1e-7, "MeanTokenLikelihood: want 0.75")
	for _, bad := range [][]float64{nil, {0.1}, {math.NaN()}, {math.Inf(-1)}} {
		_, err := rewards.MeanTokenLikelihood(bad)
		assert.Error(t, err, "MeanTokenLikelihood(%v) accepted", bad)
	}
}

func TestComposite(t *testing.T) {
	for _, c := range []struct {
		comp   rewards.Composite
		values []float64
		want   float64
	}{
		{rewards.AVATARStage1(), []float64{1, 0.8}, 0.5 + 0.4},
		{rewards.AVATARStage1(), []float64{-1, 1}, 0},
		{rewards.AVATARStage2(), []float64{1, 0.5, 1}, 0.2 + 0.2 + 0.4},
		{rewards.AVATARStage3(), []float64{-1, 1, 0.25}, -0.2 + 0.4 + 0.1},
	} {
		got, err := c.comp.Combine(c.values...)
		require.NoError(t, err, "%v.Combine(%v) = %v; want %v", c.comp, c.values, got, c.want)
		assert.True(t, near(got, c.want), "%v.Combine(%v) = %v; want %v", c.comp, c.values, got, c.want)
	}
	got, err := rewards.AVATARStage2().CombineNamed(map[string]float64{"self": 1, "acc": 0.5, "format": -1})
	require.NoError(t, err, "CombineNamed = %v", got)
	assert.True(t, near(got, -0.2+0.2+0.4), "CombineNamed = %v", got)
	s1 := rewards.AVATARStage1()
	for name, err := range map[string]error{
		"few values":    second(s1.Combine(1)),
		"NaN value":     second(s1.Combine(1, math.NaN())),
		"missing name":  second(s1.CombineNamed(map[string]float64{"format": 1})),
		"extra name":    second(s1.CombineNamed(map[string]float64{"format": 1, "acc": 1, "self": 1})),
		"empty":         second(rewards.Composite{}.Combine()),
		"repeated name": second(rewards.Composite{{"a", 1}, {"a", 1}}.Combine(1, 1)),
		"no name":       second(rewards.Composite{{"", 1}}.Combine(1)),
		"Inf weight":    second(rewards.Composite{{"a", math.Inf(1)}}.Combine(1)),
	} {
		assert.Error(t, err, "%s: accepted", name)
	}
}

func second[T any](_ T, err error) error { return err }

func TestTurnRewards(t *testing.T) {
	turns := []rewards.Turn{
		{Grounding: 1, WorldModeling: 1, FormatOK: true, Env: 10},        // success turn
		{Grounding: 1, WorldModeling: 0, FormatOK: true, Env: -0.1},      // wrong prediction
		{Grounding: 0.5, WorldModeling: 0.2, FormatOK: false, Env: -0.1}, // malformed
	}
	dst := make([]float64, len(turns))
	require.NoError(t, rewards.TurnRewards(dst, turns, rewards.VAGENTurnConfig()))
	want := []float64{0.5 + 0.5 + 0.5 + 10, 0.5 + 0.5 - 0.1, 0.25 + 0.1 - 0.1}
	for i := range want {
		assert.True(t, near(dst[i], want[i]), "r_%d = %v, want %v", i, dst[i], want[i])
	}
	bad := []struct {
		turns []rewards.Turn
		cfg   rewards.TurnConfig
	}{
		{[]rewards.Turn{{Grounding: 1.5}}, rewards.VAGENTurnConfig()},
		{[]rewards.Turn{{WorldModeling: -0.1}}, rewards.VAGENTurnConfig()},
		{[]rewards.Turn{{Env: math.NaN()}}, rewards.VAGENTurnConfig()},
		{[]rewards.Turn{{}}, rewards.TurnConfig{BetaG: math.Inf(1)}},
		{[]rewards.Turn{{Env: 1e300}}, rewards.TurnConfig{Format: 1e300}},
	}
	for i, b := range bad {
		d := make([]float32, len(b.turns))
		assert.Error(t, rewards.TurnRewards(d, b.turns, b.cfg), "bad case %d accepted", i)
	}
	assert.ErrorIs(t, rewards.TurnRewards(make([]float64, 1), turns, rewards.VAGENTurnConfig()), tensor.ErrShape, "short dst")
}

func TestGroundingWorldModelingFormat(t *testing.T) {
	ok := "<think><observation>box at (1,2)</observation><reasoning>push it down</reasoning><prediction>box at (1,3)</prediction></think><answer>Down</answer>"
	for in, want := range map[string]bool{
		ok:               true,
		"  " + ok + "\n": true,
		strings.Replace(ok, "<think>", "<think>I see. ", 1):                                       false,
		strings.Replace(ok, "</think>", "</think> so ", 1):                                        false,
		strings.Replace(ok, "<prediction>box at (1,3)</prediction>", "", 1):                       false,
		strings.Replace(ok, "<reasoning>push it down</reasoning>", "", 1):                         false, // VAGEN's Table 5 has <reasoning>
		"<think><prediction>p</prediction><observation>o</observation></think><answer>a</answer>": false,
		ok + ok: false,
	} {
		if got := rewards.GroundingWorldModelingFormat(in); got != want {
			t.Errorf("GroundingWorldModelingFormat(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	ctx := context.Background()
	j := &rewardstest.FakeJudge{}
	s, err := rewards.AskJudge(ctx, j, rewards.JudgeRequest{Response: "red box left", Reference: "red box right"}, 0)
	require.NoError(t, err, "AskJudge = %v; want 0.5 (2 of 4 tokens)", s)
	assert.True(t, near(s, 0.5), "AskJudge = %v; want 0.5 (2 of 4 tokens)", s)
	// Timeouts are honoured and reported.
	slow := &rewardstest.FakeJudge{Delay: time.Hour}
	start := time.Now()
	_, err = rewards.AskJudge(ctx, slow, rewards.JudgeRequest{}, 5*time.Millisecond)
	require.ErrorIs(t, err, rewards.ErrJudge, "slow judge")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "slow judge")
	assert.LessOrEqual(t, time.Since(start), time.Second, "timeout not honoured")
	boom := errors.New("model server down")
	_, err = rewards.AskJudge(ctx, &rewardstest.FakeJudge{Err: boom}, rewards.JudgeRequest{}, 0)
	require.ErrorIs(t, err, boom, "failing judge")
	assert.ErrorIs(t, err, rewards.ErrJudge, "failing judge")
	for _, score := range []float64{-0.1, 1.1, math.NaN()} {
		bad := rewards.JudgeFunc(func(context.Context, rewards.JudgeRequest) (float64, error) { return score, nil })
		_, err := rewards.AskJudge(ctx, bad, rewards.JudgeRequest{}, 0)
		assert.ErrorIs(t, err, rewards.ErrJudge, "judge score %v", score)
	}
	_, err = rewards.AskJudge(ctx, nil, rewards.JudgeRequest{}, 0)
	assert.Error(t, err, "nil judge accepted")
	_, err = rewards.AskJudge(ctx, j, rewards.JudgeRequest{}, -time.Second)
	assert.Error(t, err, "negative timeout accepted")
	// As a verifier, with a prompt parameter.
	var seen rewards.JudgeRequest
	spy := rewards.JudgeFunc(func(_ context.Context, r rewards.JudgeRequest) (float64, error) { seen = r; return 0.7, nil })
	jv, err := rewards.JudgeVerifier(spy, time.Second)(verifiers.Params{"prompt": "q"})
	require.NoError(t, err)
	res, err := jv.Verify(ctx, "resp", "ref")
	require.NoError(t, err, "JudgeVerifier = %+v", res)
	assert.Equal(t, 0.7, res.Score, "JudgeVerifier = %+v", res)
	assert.True(t, res.Correct, "JudgeVerifier = %+v", res)
	assert.Equal(t, (rewards.JudgeRequest{Prompt: "q", Response: "resp", Reference: "ref"}), seen, "JudgeVerifier = %+v", res)
	_, err = rewards.JudgeVerifier(spy, 0)(verifiers.Params{"promt": "q"})
	assert.ErrorIs(t, err, verifiers.ErrParam, "JudgeVerifier with a misspelt parameter")
}

func TestJudgeTurn(t *testing.T) {
	j := &rewardstest.FakeJudge{}
	resp := "<think><observation>player left of box</observation><reasoning>push right</reasoning><prediction>box on target</prediction></think><answer>Right</answer>"
	turn, err := rewards.JudgeTurn(context.Background(), j, time.Second, resp, "player left of box", "box left of target")
	require.NoError(t, err)
	// I_g: identical tokens; I_w: {box, on, target} vs {box, left, of, target} = 2/5.
	assert.True(t, turn.FormatOK, "JudgeTurn = %+v: judge calls", turn)
	assert.Equal(t, float64(1), turn.Grounding, "JudgeTurn = %+v: judge calls", turn)
	assert.True(t, near(turn.WorldModeling, 0.4), "JudgeTurn = %+v: judge calls", turn)
	assert.Equal(t, int64(2), j.Calls(), "JudgeTurn = %+v: judge calls", turn)
	turn, err = rewards.JudgeTurn(context.Background(), j, time.Second, "<answer>Right</answer>", "s", "s'")
	require.NoError(t, err, "JudgeTurn without sections judge called times")
	assert.Equal(t, (rewards.Turn{}), turn, "JudgeTurn without sections judge called times")
	assert.Equal(t, int64(2), j.Calls(), "JudgeTurn without sections judge called times")
	_, err = rewards.JudgeTurn(context.Background(), &rewardstest.FakeJudge{Err: errors.New("x")}, 0, resp, "", "")
	assert.Error(t, err, "failing judge not reported")
}
