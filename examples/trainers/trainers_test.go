package trainers_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/tensor/dense"
	gtensor "gorgonia.org/tensor"
)

// A GRPO step over a trainer's gorgonia tensors: four responses to one
// prompt, padded to four tokens, two of them correct. The log-probs, the
// rollout's log-probs and the mask are [G, T] *gtensor.Dense values; rlpost
// reads them and writes the gradient into a fourth one without copying.
func Example_grpoStepOverGorgonia() {
	const G, T = 4, 4
	logpD := gtensor.New(gtensor.WithShape(G, T), gtensor.WithBacking([]float64{
		-0.9, -1.1, -0.3, 0,
		-1.4, -0.7, 0, 0,
		-0.5, -0.6, -0.8, -1.0,
		-2.0, -0.4, -0.6, 0,
	}))
	oldD := gtensor.New(gtensor.WithShape(G, T), gtensor.WithBacking([]float64{
		-1.0, -1.0, -0.4, 0,
		-1.3, -0.7, 0, 0,
		-0.5, -0.7, -0.8, -0.9,
		-1.5, -0.4, -0.6, 0,
	}))
	maskD := gtensor.New(gtensor.WithShape(G, T), gtensor.WithBacking([]float64{
		1, 1, 1, 0,
		1, 1, 0, 0,
		1, 1, 1, 1,
		1, 1, 1, 0,
	}))
	gradD := gtensor.New(gtensor.Of(gtensor.Float64), gtensor.WithShape(G, T))

	// Zero-copy views: a Batch shares the Dense's backing array.
	var logp, old, mask, grad tensor.Batch[float64]
	for _, v := range []struct {
		dst *tensor.Batch[float64]
		src *gtensor.Dense
	}{{&logp, logpD}, {&old, oldD}, {&mask, maskD}, {&grad, gradD}} {
		b, err := dense.ToBatch[float64](v.src)
		if err != nil {
			fmt.Println(err)
			return
		}
		*v.dst = b
	}

	// Outcome rewards → group advantages (per sequence, []F) → per token.
	rewards := []float64{1, 0, 0, 1}
	seqAdv := make([]float64, G)
	if _, err := grpo.Advantages(seqAdv, rewards, grpo.Contiguous(G), grpo.DefaultConfig()); err != nil {
		fmt.Println(err)
		return
	}
	tokAdv := tensor.MustNew[float64](G, T)
	if err := grpo.Broadcast(tokAdv, seqAdv, mask); err != nil {
		fmt.Println(err)
		return
	}

	// DAPO's loss (clip-higher, token mean, no KL term).
	res, err := ppo.PolicyLoss(grad, ppo.Inputs[float64]{Logp: logp, OldLogp: old, Advantages: tokAdv, Mask: mask}, grpo.DAPOLoss())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("advantages %.3f\n", seqAdv)
	fmt.Printf("loss %.4f over %d tokens, clipped %.3f\n", res.Loss, res.Tokens, res.ClipFracHigh+res.ClipFracLow)
	g := gradD.Data().([]float64) // the gradient landed in the gorgonia tensor
	for r := range G {
		fmt.Printf("dL/dlogp row %d %+.4f\n", r, g[r*T:(r+1)*T])
	}
	// Output:
	// advantages [0.866 -0.866 -0.866 0.866]
	// loss 0.0139 over 12 tokens, clipped 0.000
	// dL/dlogp row 0 [-0.0798 -0.0653 -0.0798 +0.0000]
	// dL/dlogp row 1 [+0.0653 +0.0722 +0.0000 +0.0000]
	// dL/dlogp row 2 [+0.0722 +0.0798 +0.0722 +0.0653]
	// dL/dlogp row 3 [-0.0438 -0.0722 -0.0722 +0.0000]
}

// One step of a multi-turn agent: a two-turn episode laid out as
// [observation, response, observation, response], turn rewards at the
// turn ends, VAGEN's KL penalty on every generated token, Bi-Level GAE for
// the advantages and returns, then the policy loss and the critic loss.
func Example_agentStepBiLevelGAE() {
	const T = 10
	row := func(v ...float64) tensor.Batch[float64] {
		b, err := tensor.FromSlice(v, 1, T)
		if err != nil {
			panic(err)
		}
		return b
	}
	mask := row(0, 0, 1, 1, 1, 0, 0, 1, 1, 1)
	values := row(0, 0, 0.8, 0.9, 1.0, 0, 0, 1.2, 1.3, 1.4)        // the critic at rollout time
	oldLogp := row(0, 0, -0.5, -0.2, -0.9, 0, 0, -1.1, -0.3, -0.4) // the policy at rollout time
	refLogp := row(0, 0, -0.6, -0.2, -1.0, 0, 0, -1.0, -0.4, -0.5)
	turnRewards, _ := tensor.FromSlice([]float64{0.5, 1.5}, 1, 2) // format, then success

	// Rewards: turn rewards at turn ends, −β·KL on every generated token.
	turnEnd, rewards := tensor.MustNew[float64](1, T), tensor.MustNew[float64](1, T)
	kl := tensor.MustNew[float64](1, T)
	for i := range kl.Data {
		kl.Data[i] = oldLogp.Data[i] - refLogp.Data[i]
	}
	for _, err := range []error{
		gae.TurnEnds(turnEnd, mask),
		gae.PlaceTurnRewards(rewards, turnEnd, turnRewards),
		gae.AddKLPenalty(rewards, kl, mask, gae.DefaultKLCoef),
	} {
		if err != nil {
			fmt.Println(err)
			return
		}
	}

	adv, ret := tensor.MustNew[float64](1, T), tensor.MustNew[float64](1, T)
	if err := gae.BiLevel(adv, ret, rewards, values, mask, turnEnd, gae.DefaultBiLevelConfig()); err != nil {
		fmt.Println(err)
		return
	}

	// The update: the current policy and critic have moved a little.
	logp := row(0, 0, -0.45, -0.2, -0.85, 0, 0, -1.0, -0.3, -0.35)
	newValues := row(0, 0, 1.0, 1.0, 1.1, 0, 0, 1.3, 1.3, 1.5)
	grad, vgrad := tensor.MustNew[float64](1, T), tensor.MustNew[float64](1, T)
	res, err := ppo.PolicyLoss(grad, ppo.Inputs[float64]{Logp: logp, OldLogp: oldLogp, Advantages: adv, Mask: mask}, ppo.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	vres, err := ppo.ValueLoss(vgrad, ppo.ValueInputs[float64]{Values: newValues, OldValues: values, Returns: ret, Mask: mask}, ppo.DefaultValueConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	for t := range T {
		if mask.Data[t] == 1 {
			fmt.Printf("token %d  A %+.4f  R %.4f  dL/dlogp %+.4f  dL/dV %+.4f\n", t, adv.Data[t], ret.Data[t], grad.Data[t], vgrad.Data[t])
		}
	}
	fmt.Printf("policy loss %.4f, value loss %.4f (clipped %.2f)\n", res.Loss, vres.Loss, vres.ClipFrac)
	// Output:
	// token 2  A +1.1247  R 1.9247  dL/dlogp -0.1971  dL/dV -0.1541
	// token 3  A +1.0248  R 1.9248  dL/dlogp -0.1708  dL/dV -0.1541
	// token 4  A +0.9248  R 1.9248  dL/dlogp -0.1620  dL/dV -0.1375
	// token 7  A +0.2999  R 1.4999  dL/dlogp -0.0552  dL/dV -0.0333
	// token 8  A +0.1998  R 1.4998  dL/dlogp -0.0333  dL/dV -0.0333
	// token 9  A +0.0999  R 1.4999  dL/dlogp -0.0175  dL/dV +0.0000
	// policy loss -0.6359, value loss 0.2059 (clipped 0.00)
}

// rollout is one group of responses to a prompt, as a rollout worker
// returns it: the sampled log-probs of every response's tokens and its
// reward.
type rollout struct {
	prompt  uint64
	logp    [][]float64
	rewards []float64
}

// generate plays a rollout worker's part: for each of its prompts, four
// responses whose rewards follow the prompt's difficulty. It is seeded, so
// the loop below prints the same numbers on every run.
func generate(worker int, prompts []uint64, step int, out chan<- rollout) {
	rng := rand.New(rand.NewPCG(uint64(worker), uint64(step)))
	for _, q := range prompts {
		r := rollout{prompt: q}
		for i := range 4 {
			n := 2 + rng.IntN(3)
			lp := make([]float64, n)
			for t := range lp {
				lp[t] = -0.2 - rng.Float64()
			}
			r.logp = append(r.logp, lp)
			reward := 0.0
			if uint64(i) < 4-q%5 && rng.Float64() < 0.9 {
				reward = 1
			}
			r.rewards = append(r.rewards, reward)
		}
		out <- r
	}
}

// An AVATAR off-policy loop. Two rollout goroutines generate groups of four
// responses for their prompts; the trainer gathers a step's groups, stores
// them in a replay.Buffer, and takes one replay.Objective step on the fresh
// groups (GRPO advantages, Eq. 1) plus four replayed experiences (Eq. 11
// advantages against their prompt's R̄). Groups whose fresh rewards are all
// equal teach GRPO nothing; replay gives some of them a signal back.
func Example_avatarOffPolicyLoop() {
	buf, err := replay.New(replay.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := replay.DefaultObjectiveConfig()
	cfg.Loss.KLCoef = 0 // no reference model in this example
	obj, err := replay.NewObjective[float64](cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	rng := rand.New(rand.NewPCG(7, 7))
	workers := [][]uint64{{0, 1, 2}, {3, 4, 5}}
	for step := range 3 {
		// Rollout: two workers in parallel.
		out := make(chan rollout, 6)
		var wg sync.WaitGroup
		for w, prompts := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				generate(w, prompts, step, out)
			}()
		}
		wg.Wait()
		close(out)
		var groups []rollout
		for r := range out {
			groups = append(groups, r)
		}
		// Arrival order varies between runs; the step does not depend on it.
		slices.SortFunc(groups, func(a, b rollout) int { return int(a.prompt) - int(b.prompt) })

		// Replay first draws from what earlier steps stored.
		drawn := make([]replay.Sampled, 4)
		n, err := buf.Sample(drawn, rng, replay.SampleOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		drawn = drawn[:n]

		on, err := freshPart(groups, buf.Version())
		if err != nil {
			fmt.Println(err)
			return
		}
		off, err := replayedPart(drawn)
		if err != nil {
			fmt.Println(err)
			return
		}
		gradOn := tensor.MustNew[float64](on.Logp.B, on.Logp.T)
		gradOff := tensor.MustNew[float64](off.Logp.B, off.Logp.T)
		if off.Logp.B == 0 {
			gradOff = tensor.Batch[float64]{}
		}
		res, err := obj.Step(gradOn, gradOff, on, off)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("step %d: %d fresh groups, %d vanishing, %d rescued by %d replayed; loss %+.4f\n",
			step, res.OnAdvantages.Groups, res.Vanishing, res.Rescued, len(drawn), res.Loss)

		// Store the fresh groups for later steps; the policy moves on.
		for _, g := range groups {
			es := make([]replay.Experience, len(g.rewards))
			for i := range es {
				lp := make([]float32, len(g.logp[i]))
				for t, v := range g.logp[i] {
					lp[t] = float32(v)
				}
				es[i] = replay.Experience{Prompt: g.prompt, Logp: lp, Reward: g.rewards[i], Version: buf.Version()}
			}
			if err := buf.AddGroup(make([]replay.Receipt, len(es)), es); err != nil {
				fmt.Println(err)
				return
			}
		}
		if err := buf.SetVersion(buf.Version() + 1); err != nil {
			fmt.Println(err)
			return
		}
	}
	t := obj.Totals()
	fmt.Printf("buffer holds %d; %d of %d vanishing groups rescued\n", buf.Len(), t.Rescued, t.Vanishing)
	// Output:
	// step 0: 6 fresh groups, 2 vanishing, 0 rescued by 0 replayed; loss -0.0218
	// step 1: 6 fresh groups, 4 vanishing, 1 rescued by 4 replayed; loss -0.1579
	// step 2: 6 fresh groups, 3 vanishing, 0 rescued by 4 replayed; loss +0.0203
	// buffer holds 72; 1 of 9 vanishing groups rescued
}

// freshPart lays the groups out as the on-policy part of a step: one row
// per response, padded to the longest, with the current policy's log-probs
// (here the rollout's own: the first epoch of a step, ratio 1).
func freshPart(groups []rollout, version int64) (replay.OnPolicy[float64], error) {
	T := 0
	var rewards []float64
	var prompts []uint64
	for _, g := range groups {
		for i, lp := range g.logp {
			T = max(T, len(lp))
			rewards = append(rewards, g.rewards[i])
			prompts = append(prompts, g.prompt)
		}
	}
	B := len(rewards)
	logp, mask := tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
	b := 0
	for _, g := range groups {
		for _, lp := range g.logp {
			copy(logp.Row(b), lp)
			for t := range lp {
				mask.Set(b, t, 1)
			}
			b++
		}
	}
	return replay.OnPolicy[float64]{Logp: logp, OldLogp: logp, Mask: mask, Rewards: rewards,
		Groups: grpo.Contiguous(4), Prompts: prompts}, nil
}

// replayedPart lays replayed experiences out as the off-policy part: the
// current policy's log-probs of their tokens (here the stored ones shifted a
// little, as a policy that moved on would give) under a prefix mask.
func replayedPart(drawn []replay.Sampled) (replay.OffPolicy[float64], error) {
	T := 0
	for _, s := range drawn {
		T = max(T, len(s.Logp))
	}
	logp, mask := tensor.MustNew[float64](len(drawn), T), tensor.MustNew[float64](len(drawn), T)
	lengths := make([]int, len(drawn))
	for i, s := range drawn {
		lengths[i] = len(s.Logp)
		for t, v := range s.Logp {
			logp.Set(i, t, float64(v)+0.05)
		}
	}
	if err := tensor.PrefixMask(mask, lengths); err != nil {
		return replay.OffPolicy[float64]{}, err
	}
	return replay.OffPolicy[float64]{Logp: logp, Mask: mask, Samples: drawn}, nil
}
