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
		if err != nil || !near(got, c.want) {
			t.Errorf("RMAE(%v, %v) = %v, %v; want %v", c.pred, c.gold, got, err, c.want)
		}
	}
	for _, c := range [][2]float64{{1, 0}, {1, math.NaN()}, {math.NaN(), 1}, {1, math.Inf(-1)}} {
		if _, err := rewards.RMAE(c[0], c[1]); err == nil {
			t.Errorf("RMAE(%v, %v) accepted", c[0], c[1])
		}
	}
	ctx := context.Background()
	v, err := rewards.RMAEVerifier(nil)
	require.NoError(t, err)
	res, err := v.Verify(ctx, "<answer>about 45 people</answer>", "50")
	if err != nil || !near(res.Score, 0.9) || res.Correct || res.Parsed != "45" {
		t.Errorf("RMAEVerifier = %+v, %v", res, err)
	}
	res, _ = v.Verify(ctx, "<answer>"+strings.Repeat("9", 400)+"</answer>", "50")
	if res.Score != 0 {
		t.Errorf("RMAEVerifier beyond float64 = %+v, want 0", res)
	}
	if _, err := v.Verify(ctx, "1", "0"); !errors.Is(err, tensor.ErrRange) || !strings.HasPrefix(err.Error(), "rewards: rmae: ") {
		t.Errorf("RMAEVerifier with gold 0: %v, want tensor.ErrRange prefixed \"rewards: rmae: \"", err)
	}
	if _, err := v.Verify(ctx, "1", "none"); !errors.Is(err, verifiers.ErrSyntax) {
		t.Errorf("RMAEVerifier with no number in the reference: %v, want ErrSyntax", err)
	}
	if _, err := rewards.RMAEVerifier(verifiers.Params{"extract": "slot"}); !errors.Is(err, verifiers.ErrParam) {
		t.Errorf("RMAEVerifier(extract slot) = %v, want ErrParam", err)
	}
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
		if err != nil || best != c.best {
			t.Errorf("%s: best %d, %v; want %d", c.name, best, err, c.best)
		}
		for i := range dst {
			if dst[i] != c.want[i] {
				t.Errorf("%s: dst = %v, want %v", c.name, dst, c.want)
				break
			}
		}
	}
	if _, err := rewards.SelfReward(make([]float64, 1), []string{"a", "b"}, nil); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("short dst: %v", err)
	}
	if _, err := rewards.SelfReward(make([]float64, 2), []string{"a", "b"}, []float64{1}); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("short confidence: %v", err)
	}
	if _, err := rewards.SelfReward(make([]float64, 2), []string{"a", "b"}, []float64{1, math.NaN()}); !errors.Is(err, tensor.ErrNonFinite) {
		t.Errorf("NaN confidence: %v", err)
	}
}

func TestMeanTokenLikelihood(t *testing.T) {
	got, err := rewards.MeanTokenLikelihood([]float32{0, float32(math.Log(0.5))})
	if err != nil || math.Abs(got-0.75) > 1e-7 {
		t.Errorf("MeanTokenLikelihood = %v, %v; want 0.75", got, err)
	}
	for _, bad := range [][]float64{nil, {0.1}, {math.NaN()}, {math.Inf(-1)}} {
		if _, err := rewards.MeanTokenLikelihood(bad); err == nil {
			t.Errorf("MeanTokenLikelihood(%v) accepted", bad)
		}
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
		if err != nil || !near(got, c.want) {
			t.Errorf("%v.Combine(%v) = %v, %v; want %v", c.comp, c.values, got, err, c.want)
		}
	}
	got, err := rewards.AVATARStage2().CombineNamed(map[string]float64{"self": 1, "acc": 0.5, "format": -1})
	if err != nil || !near(got, -0.2+0.2+0.4) {
		t.Errorf("CombineNamed = %v, %v", got, err)
	}
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
		if !near(dst[i], want[i]) {
			t.Errorf("r_%d = %v, want %v", i, dst[i], want[i])
		}
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
		if err := rewards.TurnRewards(d, b.turns, b.cfg); err == nil {
			t.Errorf("bad case %d accepted", i)
		}
	}
	if err := rewards.TurnRewards(make([]float64, 1), turns, rewards.VAGENTurnConfig()); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("short dst: %v", err)
	}
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
	if err != nil || !near(s, 0.5) {
		t.Errorf("AskJudge = %v, %v; want 0.5 (2 of 4 tokens)", s, err)
	}
	// Timeouts are honoured and reported.
	slow := &rewardstest.FakeJudge{Delay: time.Hour}
	start := time.Now()
	if _, err := rewards.AskJudge(ctx, slow, rewards.JudgeRequest{}, 5*time.Millisecond); !errors.Is(err, rewards.ErrJudge) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow judge: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("timeout not honoured: %v", time.Since(start))
	}
	boom := errors.New("model server down")
	if _, err := rewards.AskJudge(ctx, &rewardstest.FakeJudge{Err: boom}, rewards.JudgeRequest{}, 0); !errors.Is(err, boom) || !errors.Is(err, rewards.ErrJudge) {
		t.Errorf("failing judge: %v", err)
	}
	for _, score := range []float64{-0.1, 1.1, math.NaN()} {
		bad := rewards.JudgeFunc(func(context.Context, rewards.JudgeRequest) (float64, error) { return score, nil })
		if _, err := rewards.AskJudge(ctx, bad, rewards.JudgeRequest{}, 0); !errors.Is(err, rewards.ErrJudge) {
			t.Errorf("judge score %v: %v", score, err)
		}
	}
	if _, err := rewards.AskJudge(ctx, nil, rewards.JudgeRequest{}, 0); err == nil {
		t.Errorf("nil judge accepted")
	}
	if _, err := rewards.AskJudge(ctx, j, rewards.JudgeRequest{}, -time.Second); err == nil {
		t.Errorf("negative timeout accepted")
	}
	// As a verifier, with a prompt parameter.
	var seen rewards.JudgeRequest
	spy := rewards.JudgeFunc(func(_ context.Context, r rewards.JudgeRequest) (float64, error) { seen = r; return 0.7, nil })
	jv, err := rewards.JudgeVerifier(spy, time.Second)(verifiers.Params{"prompt": "q"})
	require.NoError(t, err)
	res, err := jv.Verify(ctx, "resp", "ref")
	if err != nil || res.Score != 0.7 || !res.Correct || seen != (rewards.JudgeRequest{Prompt: "q", Response: "resp", Reference: "ref"}) {
		t.Errorf("JudgeVerifier = %+v, %v, saw %+v", res, err, seen)
	}
	if _, err := rewards.JudgeVerifier(spy, 0)(verifiers.Params{"promt": "q"}); !errors.Is(err, verifiers.ErrParam) {
		t.Errorf("JudgeVerifier with a misspelt parameter: %v", err)
	}
}

func TestJudgeTurn(t *testing.T) {
	j := &rewardstest.FakeJudge{}
	resp := "<think><observation>player left of box</observation><reasoning>push right</reasoning><prediction>box on target</prediction></think><answer>Right</answer>"
	turn, err := rewards.JudgeTurn(context.Background(), j, time.Second, resp, "player left of box", "box left of target")
	require.NoError(t, err)
	// I_g: identical tokens; I_w: {box, on, target} vs {box, left, of, target} = 2/5.
	if !turn.FormatOK || turn.Grounding != 1 || !near(turn.WorldModeling, 0.4) || j.Calls() != 2 {
		t.Errorf("JudgeTurn = %+v after %d calls", turn, j.Calls())
	}
	turn, err = rewards.JudgeTurn(context.Background(), j, time.Second, "<answer>Right</answer>", "s", "s'")
	if err != nil || turn != (rewards.Turn{}) || j.Calls() != 2 {
		t.Errorf("JudgeTurn without sections = %+v, %v; judge called %d times", turn, err, j.Calls())
	}
	if _, err := rewards.JudgeTurn(context.Background(), &rewardstest.FakeJudge{Err: errors.New("x")}, 0, resp, "", ""); err == nil {
		t.Errorf("failing judge not reported")
	}
}
