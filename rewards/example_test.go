package rewards_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/rewards/rewardstest"
)

// A mixed batch is routed sample by sample to the verifier its spec names;
// each reward is a·acc + f·format (V-Triune §3.2).
func ExampleRouter() {
	specs := `[
	  {"data_source": "mmk12", "verifier": "choice", "accuracy_ratio": 1.0, "format_ratio": 0.1},
	  {"data_source": "pixmo_count", "verifier": "number"},
	  {"data_source": "coco", "verifier": "iou", "verifier_parm": {"threshold": 0.5}}
	]`
	var spec []rewards.RouteSpec
	if err := json.Unmarshal([]byte(specs), &spec); err != nil {
		fmt.Println(err)
		return
	}
	samples := []rewards.Sample{
		{Spec: spec[0], Response: "<think>wait, B fits</think><answer>B</answer>", Reference: "B", Length: 12},
		{Spec: spec[1], Response: "<answer>7</answer>", Reference: "8", Length: 3},
		{Spec: spec[2], Response: "<think>the cat</think><answer>[0,0,10,8]</answer>", Reference: "[0,0,10,10]", Length: 9},
	}
	diag := rewards.NewDiagnostics()
	router := rewards.Router{Diagnostics: diag}
	out := make([]rewards.Outcome, len(samples))
	if err := router.Route(context.Background(), out, samples); err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range out {
		fmt.Printf("reward %.3f = 1·%.1f + 0.1·%.2f  err %v\n", o.Reward, o.Accuracy, o.Format, o.Err)
	}
	for _, s := range diag.Flush() {
		fmt.Printf("%s: n=%d accuracy %.2f reflection %.0f%%\n", s.Source, s.Count, s.Accuracy, 100*s.ReflectionRatio)
	}
	// Output:
	// reward 1.100 = 1·1.0 + 0.1·1.00  err <nil>
	// reward 0.050 = 1·0.0 + 0.1·0.50  err <nil>
	// reward 0.900 = 1·0.8 + 0.1·1.00  err <nil>
	// coco: n=1 accuracy 0.80 reflection 0%
	// mmk12: n=1 accuracy 1.00 reflection 100%
	// pixmo_count: n=1 accuracy 0.00 reflection 0%
}

// AVATAR's stage S2 reward for a group of four responses: format ±1,
// rMAE accuracy and the self-reward of the majority answer.
func ExampleAVATARStage2() {
	responses := []string{
		"<think>count</think><answer>12</answer>",
		"<think>count</think><answer>12</answer>",
		"<answer>10</answer>",
		"<think>count</think><answer>15</answer>",
	}
	answers := []string{"12", "12", "10", "15"}
	gold := 10.0
	self := make([]float64, len(answers))
	if _, err := rewards.SelfReward(self, answers, nil); err != nil {
		fmt.Println(err)
		return
	}
	stage := rewards.AVATARStage2()
	for i, resp := range responses {
		var a float64
		fmt.Sscan(answers[i], &a)
		acc, _ := rewards.RMAE(a, gold)
		r, _ := stage.Combine(rewards.Format(resp), acc, self[i])
		fmt.Printf("%.2f\n", r)
	}
	// Output:
	// 0.92
	// 0.92
	// 0.20
	// 0.40
}

// VAGEN's turn reward with a judge for the visual-reasoning terms.
func ExampleJudgeTurn() {
	judge := &rewardstest.FakeJudge{} // token overlap; a real judge asks a model
	response := "<think><observation>box left of target</observation>" +
		"<reasoning>push the box right</reasoning>" +
		"<prediction>box on target</prediction></think><answer>Right</answer>"
	turn, err := rewards.JudgeTurn(context.Background(), judge, 0, response,
		"box left of target", "box on target")
	if err != nil {
		fmt.Println(err)
		return
	}
	turn.Env = 10 // the environment's success reward
	r := make([]float64, 1)
	if err := rewards.TurnRewards(r, []rewards.Turn{turn}, rewards.VAGENTurnConfig()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r[0]) // 0.5·1 + 0.5·1 + 0.5 + 10
	// Output: 11.5
}

// VAGEN's anti-hacking reward: structured F1, and −0.1 for a frequent
// sentence repeated with F1 < 0.7. The tracker is the trainer's state:
// score a step's responses, then record their sentences.
func ExampleRepetitionTracker() {
	tr, err := rewards.NewRepetitionTracker(rewards.VAGENRepetitionConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	truth := `{"box0": ["below player"], "target0": ["below box0"]}`
	sentence := "The box is below the player and the target is below the box."
	for step := range 2 {
		s, err := rewards.ScoreStructured(tr, sentence, `{"box0": ["below player"], "target0": ["left of box0"]}`, truth)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("step %d: F1 %.2f repeated %v reward %.2f\n", step, s.F1, s.Repeated, s.Reward)
		tr.Record(sentence)
	}
	// Output:
	// step 0: F1 0.50 repeated false reward 0.50
	// step 1: F1 0.50 repeated true reward 0.40
}
