package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
)

// Five prompts the policy solves 4, 3, 2, 1 and 0 times out of 4, over
// two steps. Each group's rewards update its prompt's R̄, and its
// experiences go to the tier of the prompt's place among the R̄ known at
// the time: in the first step every prompt arrives below those before it
// and lands in Hard; in the second the tiers follow R̄. A sample late in
// training draws mostly from the hard end.
func ExampleBuffer() {
	buf, err := replay.New(replay.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	for step := range 2 {
		for q := range uint64(5) {
			group := make([]replay.Experience, 4)
			for i := range group {
				reward := 0.0
				if i < 4-int(q) {
					reward = 1
				}
				group[i] = replay.Experience{Prompt: q, Logp: []float32{-0.7, -1.2, -0.1}, Reward: reward, Version: int64(step)}
			}
			receipts := make([]replay.Receipt, 4)
			if err := buf.AddGroup(receipts, group); err != nil {
				fmt.Println(err)
				return
			}
			if step == 1 {
				m, n, _ := buf.Baseline(q)
				fmt.Printf("prompt %d: R̄ %.2f over %d rewards → %v\n", q, m, n, receipts[0].Tier)
			}
		}
		buf.SetVersion(int64(step + 1))
	}
	w, _ := replay.DefaultCurriculum().Weights(0.9)
	dst := make([]replay.Sampled, 4)
	n, _ := buf.Sample(dst, rand.New(rand.NewPCG(1, 2)), replay.SampleOptions{Weights: w})
	for _, s := range dst[:n] {
		fmt.Printf("replayed prompt %d from %v: reward %v, R̄ %.2f, age %d\n", s.Prompt, s.Tier, s.Reward, s.Baseline, s.Age)
	}
	fmt.Println("tier sizes (easy, medium, hard):", buf.Stats().Len)
	// Output:
	// prompt 0: R̄ 1.00 over 8 rewards → easy
	// prompt 1: R̄ 0.75 over 8 rewards → medium
	// prompt 2: R̄ 0.50 over 8 rewards → medium
	// prompt 3: R̄ 0.25 over 8 rewards → hard
	// prompt 4: R̄ 0.00 over 8 rewards → hard
	// replayed prompt 4 from hard: reward 0, R̄ 0.00, age 2
	// replayed prompt 1 from medium: reward 1, R̄ 0.75, age 1
	// replayed prompt 0 from hard: reward 1, R̄ 1.00, age 2
	// replayed prompt 3 from hard: reward 1, R̄ 0.25, age 2
	// tier sizes (easy, medium, hard): [4 8 28]
}

// Eq. 11: replayed rewards against their prompts' R̄, scaled by the
// batch's standard deviation. A batch of equal rewards still carries a
// signal wherever R̄ differs; with the StdFloor guard on it is divided by
// the floor instead of a vanishing σ_off (as written, by ε alone).
func ExampleAdvantages() {
	adv := make([]float64, 4)
	st, _ := replay.Advantages(adv, []float64{1, 0, 1, 0}, []float64{0.25, 0.25, 0.9, 0.6}, replay.DefaultAdvantageConfig())
	fmt.Printf("%.3f  σ_off %.3f\n", adv, st.Std)
	guarded := replay.DefaultAdvantageConfig()
	guarded.StdFloor = replay.DefaultStdFloor
	st, _ = replay.Advantages(adv, []float64{1, 1, 1, 1}, []float64{0.25, 0.5, 0.9, 1}, guarded)
	fmt.Printf("%.3f  floored %v\n", adv, st.Floored)
	// Output:
	// [1.299 -0.433 0.173 -1.039]  σ_off 0.577
	// [7.500 5.000 1.000 0.000]  floored true
}

// One AVATAR step for one prompt: four fresh responses that all failed —
// GRPO's advantages vanish — and two replayed ones whose rewards differ
// from the prompt's R̄, which keep the step informative.
func ExampleObjective_Step() {
	rows := func(r ...[]float64) tensor.Batch[float64] { x, _ := tensor.FromRows[float64](r); return x }
	on := replay.OnPolicy[float64]{
		Logp:    rows([]float64{-1, -2, -1}, []float64{-1, -1, -1}, []float64{-2, -2, -2}, []float64{-1, -1, 0}),
		OldLogp: rows([]float64{-1, -2, -1}, []float64{-1, -1, -1}, []float64{-2, -2, -2}, []float64{-1, -1, 0}),
		Mask:    rows([]float64{1, 1, 1}, []float64{1, 1, 0}, []float64{1, 1, 1}, []float64{1, 0, 0}),
		Rewards: []float64{0, 0, 0, 0},
		Groups:  grpo.Contiguous(4),
		Prompts: []uint64{7, 7, 7, 7},
	}
	off := replay.OffPolicy[float64]{
		Logp: rows([]float64{-0.9, -1.1, -0.5}, []float64{-0.4, -0.6, -9}),
		Mask: rows([]float64{1, 1, 1}, []float64{1, 1, 0}),
		Samples: []replay.Sampled{
			{Experience: replay.Experience{Prompt: 7, Logp: []float32{-1, -1, -0.5}, Reward: 1}, Baseline: 0.2},
			{Experience: replay.Experience{Prompt: 7, Logp: []float32{-0.5, -0.5}, Reward: 0}, Baseline: 0.2},
		},
	}
	cfg := replay.DefaultObjectiveConfig()
	cfg.Loss.KLCoef = 0 // no reference model in this example
	obj, _ := replay.NewObjective[float64](cfg)
	gradOn, gradOff := tensor.MustNew[float64](4, 3), tensor.MustNew[float64](2, 3)
	res, err := obj.Step(gradOn, gradOff, on, off)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("vanishing groups %d, rescued %d\n", res.Vanishing, res.Rescued)
	fmt.Printf("off-policy advantages %.3f\n", obj.OffAdvantages())
	fmt.Printf("loss %.4f = %.4f + α·%.4f\n", res.Loss, res.On.Loss, res.Off.Loss)
	fmt.Printf("on-policy gradient all zero: %v\n", gradOn.Data[0] == 0 && gradOn.Data[5] == 0)
	fmt.Printf("off-policy gradient %.4f\n", gradOff.Data)
	// Output:
	// vanishing groups 1, rescued 1
	// off-policy advantages [1.131 -0.283]
	// loss -0.4057 = 0.0000 + α·-0.6762
	// on-policy gradient all zero: true
	// off-policy gradient [-0.1951 -0.1228 -0.1765 0.0488 0.0399 0.0000]
}

// The default curriculum moves the tier weights from easy-heavy to
// hard-heavy.
func ExampleCurriculum_Weights() {
	c := replay.DefaultCurriculum()
	for _, p := range []float64{0, 0.5, 1} {
		w, _ := c.Weights(p)
		fmt.Printf("progress %.1f: easy %.3f, medium %.3f, hard %.3f\n", p, w[replay.Easy], w[replay.Medium], w[replay.Hard])
	}
	// Output:
	// progress 0.0: easy 0.500, medium 0.350, hard 0.150
	// progress 0.5: easy 0.325, medium 0.350, hard 0.325
	// progress 1.0: easy 0.150, medium 0.350, hard 0.500
}

// A prompt failed 20 times in a row while the policy barely moved on it:
// it gets its pre-computed hint, up to the cap.
func ExampleHinter_Hint() {
	buf, _ := replay.New(replay.DefaultConfig())
	for range 20 {
		buf.Observe(42, 0)
	}
	hints := map[uint64]string{42: "first locate the object making the sound, then count"}
	h, _ := replay.NewHinter(buf, replay.DefaultHintConfig(), replay.HintFunc(
		func(_ context.Context, q uint64) (string, error) { return hints[q], nil }))
	for _, kl := range []float64{0.2, 0.001, 0.001, 0.001, 0.001} {
		hint, ok, err := h.Hint(context.Background(), 42, kl)
		fmt.Printf("KL %.3f: %v %q %v\n", kl, ok, hint, err)
	}
	// Output:
	// KL 0.200: false "" <nil>
	// KL 0.001: true "first locate the object making the sound, then count" <nil>
	// KL 0.001: true "first locate the object making the sound, then count" <nil>
	// KL 0.001: true "first locate the object making the sound, then count" <nil>
	// KL 0.001: false "" <nil>
}

// A checkpoint of the buffer, written atomically and read back.
func ExampleBuffer_SaveFile() {
	buf, _ := replay.New(replay.DefaultConfig())
	buf.Add(replay.Experience{Prompt: 1, Logp: []float32{-0.3}, Reward: 1, Payload: []byte("What is 2+2?")})
	dir, _ := os.MkdirTemp("", "replay")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "replay.snap")
	if err := buf.SaveFile(path); err != nil {
		fmt.Println(err)
		return
	}
	back, err := replay.LoadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	e := back.Entries(nil)[0]
	fmt.Printf("%d experience, payload %q\n", back.Len(), e.Payload)
	var a, b bytes.Buffer
	buf.Snapshot(&a)
	back.Snapshot(&b)
	fmt.Println("identical:", bytes.Equal(a.Bytes(), b.Bytes()))
	// Output:
	// 1 experience, payload "What is 2+2?"
	// identical: true
}
