package replay

import (
	"fmt"

	"github.com/rlpost/rlpost/tensor"
)

// The buffer stores log-probabilities as float32 and rewards as float64,
// whatever the precision of the Objective[F] that trains on them: one
// snapshot format, and half the memory of float64 log-probs. These
// helpers carry a trainer's F across that boundary, so that it writes no
// conversion loops.

// NewExperience returns the Experience of a response whose behaviour
// log-probabilities and reward a trainer holds in its own precision F.
// logp is copied (converted to float32, the storage precision); the
// buffer's Add validates the result.
func NewExperience[F tensor.Float](prompt uint64, logp []F, reward F, version int64) Experience {
	lp := make([]float32, len(logp))
	for i, v := range logp {
		lp[i] = float32(v)
	}
	return Experience{Prompt: prompt, Logp: lp, Reward: float64(reward), Version: version}
}

// Rewards writes the reward and the baseline R̄(q) of each sampled
// experience into rewards and baselines (each of len(samples); either may
// be nil), in F: the inputs of Advantages.
func Rewards[F tensor.Float](rewards, baselines []F, samples []Sampled) error {
	for _, d := range [...]struct {
		name string
		dst  []F
	}{{"rewards", rewards}, {"baselines", baselines}} {
		if d.dst != nil && len(d.dst) != len(samples) {
			return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, d.name, nil, "length %d, want %d (samples)", len(d.dst), len(samples)))
		}
	}
	for i := range samples {
		if rewards != nil {
			rewards[i] = F(samples[i].Reward)
		}
		if baselines != nil {
			baselines[i] = F(samples[i].Baseline)
		}
	}
	return nil
}
