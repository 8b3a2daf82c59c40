package verifiers_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/verifiers"
)

// New builds a verifier from V-Triune's verifier key and per-sample
// verifier_parm, read once; Verify then takes (ctx, response, reference).
func ExampleNew() {
	v, err := verifiers.New("number", verifiers.Params{"tol": 0.01})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, response := range []string{"The answer is 3.14.", "The answer is 3.2."} {
		res, _ := v.Verify(context.Background(), response, `\pi \approx 3.1416`)
		fmt.Println(res.Score, res.Parsed)
	}
	_, err = verifiers.New("number", verifiers.Params{"tolerance": 0.01})
	fmt.Println(errors.Is(err, verifiers.ErrParam))
	// Output:
	// 1 3.14
	// 0 3.2
	// true
}

// Registry.Verify is the one-call form that `rlpost verify` and `rlpost
// serve` use, with a verifier name and parameters per sample.
func Example() {
	ctx := context.Background()
	response := "<think>The second option shows a cat.</think><answer>B</answer>"
	res, err := verifiers.Default.Verify(ctx, "choice", response, "B", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Score, res.Correct, res.Parsed)
	// Output: 1 true B
}

func ExampleDetectionVerifier() {
	gold := `[{"label": "cat", "bbox": [0, 0, 100, 100]}, {"label": "dog", "bbox": [200, 0, 300, 100]}]`
	pred := "<answer>```json\n" +
		`[{"bbox_2d": [0, 0, 100, 90], "label": "cat"}, {"bbox_2d": [200, 0, 300, 100], "label": "cat"}]` +
		"\n```</answer>"
	// Early in training (progress 5%) Dynamic IoU asks for IoU ≥ 0.85. The
	// cat matches with IoU 0.9; the second box has the wrong label, so the
	// dog is missed and the box is a false alarm.
	res, err := verifiers.DetectionVerifier(context.Background(), pred, gold, verifiers.Params{"progress": 0.05})
	if err != nil {
		fmt.Println(err)
		return
	}
	// (0.9·0.7 + (1 − (0.5 + 0.5)/2)·0.3)·0.6⁰
	fmt.Printf("%.2f %v\n", res.Score, res.Correct)
	// Output: 0.78 false
}

func ExampleOCR() {
	// Edits are counted in characters: one substitution in four.
	res, _ := verifiers.OCR(context.Background(), "<answer>北京大字</answer>", "北京大学", nil)
	fmt.Println(res.Score)
	// Output: 0.75
}

func ExampleDynamicIoU() {
	for _, p := range []float64{0.05, 0.2, 0.5} {
		t, _ := verifiers.DynamicIoU(p)
		fmt.Println(p, t)
	}
	// Output:
	// 0.05 0.85
	// 0.2 0.95
	// 0.5 0.99
}

func ExampleAdaptiveIoU() {
	a, _ := verifiers.NewAdaptiveIoU(0.5)
	// Three batches: 80% of boxes beat the threshold, then 80%, then 20%.
	for _, bsr := range []float64{0.8, 0.8, 0.2} {
		t, _ := a.Step(bsr)
		fmt.Println(t)
	}
	// Output:
	// 0.55
	// 0.6
	// 0.55
}

func ExampleAssign() {
	// Three workers, three jobs: minimise the total cost.
	cost := [][]float64{
		{4, 1, 3},
		{2, 0, 5},
		{3, 2, 2},
	}
	dst := make([]int, 3)
	total, _ := verifiers.Assign(dst, cost)
	fmt.Println(dst, total)
	// Output: [1 0 2] 5
}

func ExampleFormatTags() {
	fmt.Println(verifiers.FormatTags("<think>a</think><answer>b</answer>"))
	fmt.Println(verifiers.FormatTags("<think>a</think><answer>b"))
	// Output:
	// 1
	// 0.75
}

func ExampleRegistry() {
	var reg verifiers.Registry
	exact := verifiers.Func(func(_ context.Context, response, reference string) (verifiers.Result, error) {
		if response == reference {
			return verifiers.Result{Score: 1, Correct: true, Parsed: response}, nil
		}
		return verifiers.Result{Parsed: response}, nil
	})
	if err := reg.Register("exact", verifiers.WithoutParams(exact)); err != nil {
		fmt.Println(err)
		return
	}
	res, _ := reg.Verify(context.Background(), "exact", "yes", "yes", nil)
	fmt.Println(reg.Names(), res.Score)
	// Output: [exact] 1
}

// The answer slot is the one place math, choice and number read: here the
// value after the last answer phrase, not the numbers of the reasoning.
func ExampleAnswerSlot() {
	for _, response := range []string{
		"<think>3 + 4 = 7, so 7 apples.</think>The answer is 7.",
		"<think>The answer is 7.</think>I am not sure.",
		`First \boxed{7}, then on reflection \boxed{8}.`,
	} {
		answer, reason := verifiers.AnswerSlot(response, false)
		fmt.Printf("%q %q\n", answer, reason)
	}
	// Output:
	// "7" ""
	// "" "no answer slot (no <answer>, \\boxed{}, answer phrase or bare final line)"
	// "8, 7" ""
}

// A slot with several different numbers earns nothing; notation is read
// exactly.
func ExampleNumber() {
	ctx := context.Background()
	for _, pred := range []string{"The answer is 1.5e3.", "The answer is 3e5.", "The answer is 1,500 or 1,600.", "The answer is −1,500."} {
		res, _ := verifiers.Number(ctx, pred, "1500", nil)
		fmt.Printf("%v %q [%s]\n", res.Score, res.Parsed, res.Reason)
	}
	// Output:
	// 1 "1500" []
	// 0 "300000" []
	// 0 "" [several different numbers in the answer]
	// 0 "-1500" []
}

func ExampleReadChoice() {
	for _, s := range []string{"Option B", "The answer is (D).", "A, B, C, D", "A cat sat on the mat"} {
		letter, reason, ok := verifiers.ReadChoice(s)
		fmt.Printf("%q %v [%s]\n", letter, ok, reason)
	}
	// Output:
	// 'B' true []
	// 'D' true []
	// '\x00' false [several options in the answer]
	// '\x00' false [the answer does not open with an option letter]
}

// A GRPO step scores a group of four responses under the batch's deadline.
// A response the deadline cut off is no verdict: Rewards marks it unscored
// and grpo leaves it out of its group's mean and std (advantage 0), instead
// of training on a reward of 0 it never earned.
func ExampleRewards() {
	results := []verifiers.Result{
		{Score: 1, Correct: true},
		{Score: 0},
		{Timeout: true, Reason: "timeout: context deadline exceeded"}, // Verify returned it with context.DeadlineExceeded
		{Score: 1, Correct: true},
	}
	rewards := make([]float32, len(results))
	scored := make([]bool, len(results))
	if err := verifiers.Rewards(rewards, scored, results); err != nil {
		panic(err)
	}
	adv := make([]float32, len(rewards))
	st, err := grpo.AdvantagesWith(adv, rewards, grpo.Contiguous(4), grpo.DefaultConfig(), grpo.Inputs[float32]{Scored: scored})
	if err != nil {
		panic(err)
	}
	fmt.Printf("scored %v, unscored %d\n", scored, st.Unscored)
	fmt.Printf("advantages %.4f\n", adv)
	// Output:
	// scored [true true false true], unscored 1
	// advantages [0.5773 -1.1547 0.0000 0.5773]
}
