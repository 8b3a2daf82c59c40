package replay_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZeroConfigs walks every configuration of the package: a zero value
// that would turn off what it configures (capacity 0, no hint ever, α = 0,
// no curriculum point) is an error naming its Default; the others are the
// default or a documented meaning.
func TestZeroConfigs(t *testing.T) {
	buf, err := replay.New(replay.DefaultConfig())
	require.NoError(t, err)
	hint := replay.HintFunc(func(context.Context, uint64) (string, error) { return "", nil })
	_, errNew := replay.New(replay.Config{})
	_, errHinter := replay.NewHinter(buf, replay.HintConfig{}, hint)
	_, errObjective := replay.NewObjective[float32](replay.ObjectiveConfig{})
	for _, c := range []struct {
		name, arg, start string
		kind             error
		err              error
	}{
		{"Config", "Config", "DefaultConfig", tensor.ErrRange, replay.Config{}.Validate()},
		{"New", "Config", "DefaultConfig", tensor.ErrRange, errNew},
		{"HintConfig", "HintConfig", "DefaultHintConfig", tensor.ErrRange, replay.HintConfig{}.Validate()},
		{"NewHinter", "HintConfig", "DefaultHintConfig", tensor.ErrRange, errHinter},
		{"ObjectiveConfig", "ObjectiveConfig", "DefaultObjectiveConfig", tensor.ErrRange, replay.ObjectiveConfig{}.Validate()},
		{"NewObjective", "ObjectiveConfig", "DefaultObjectiveConfig", tensor.ErrRange, errObjective},
		{"Curriculum", "Curriculum.Points", "DefaultCurriculum", tensor.ErrEmpty, replay.Curriculum{}.Validate()},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.err)
			assert.True(t, errors.Is(c.err, c.kind), "%v", c.err)
			var ae *tensor.ArgError
			require.True(t, errors.As(c.err, &ae), "%v", c.err)
			assert.Equal(t, c.arg, ae.Arg)
			assert.Contains(t, c.err.Error(), c.start)
		})
	}

	// The zero AdvantageConfig is Eq. 11 with ε = 0 and the default floor.
	require.NoError(t, replay.AdvantageConfig{}.Validate())
	dst := make([]float64, 2)
	_, err = replay.Advantages(dst, []float64{1, 0}, []float64{0.5, 0.5}, replay.AdvantageConfig{})
	require.NoError(t, err)
	assert.InDelta(t, 0.5/0.7071067811865476, dst[0], 1e-12)
	assert.InDelta(t, -0.5/0.7071067811865476, dst[1], 1e-12)

	// The zero SampleOptions draw uniformly, without replacement.
	_, err = buf.Add(replay.Experience{Prompt: 1, Reward: 1, Logp: []float32{-1}})
	require.NoError(t, err)
	got := make([]replay.Sampled, 2)
	n, err := buf.Sample(got, rand.New(rand.NewPCG(1, 2)), replay.SampleOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one experience, drawn once without replacement")

	for _, err := range []error{replay.DefaultConfig().Validate(), replay.DefaultHintConfig().Validate(),
		replay.DefaultObjectiveConfig().Validate(), replay.DefaultCurriculum().Validate(), replay.DefaultAdvantageConfig().Validate()} {
		assert.NoError(t, err)
	}
}
