package replay_test

import (
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGenericHelpers: a float32 trainer adds and reads back experiences
// without a conversion loop; wrong lengths are ErrShape.
func TestGenericHelpers(t *testing.T) {
	buf, err := replay.New(replay.DefaultConfig())
	require.NoError(t, err)
	logp := []float32{-0.5, -1.25}
	e := replay.NewExperience(7, logp, float32(1), 0)
	logp[0] = 99 // copied
	assert.Equal(t, []float32{-0.5, -1.25}, e.Logp)
	assert.Equal(t, 1.0, e.Reward)
	_, err = buf.Add(e)
	require.NoError(t, err)
	e64 := replay.NewExperience(7, []float64{-0.1}, 0.0, 0)
	_, err = buf.Add(e64)
	require.NoError(t, err)

	dst := make([]replay.Sampled, 2)
	n, err := buf.Sample(dst, rand.New(rand.NewPCG(1, 2)), replay.SampleOptions{})
	require.NoError(t, err)
	rewards, baselines := make([]float32, n), make([]float32, n)
	require.NoError(t, replay.Rewards(rewards, baselines, dst[:n]))
	for i := range n {
		assert.Equal(t, float32(dst[i].Reward), rewards[i])
		assert.Equal(t, float32(dst[i].Baseline), baselines[i])
	}
	assert.ErrorIs(t, replay.Rewards(make([]float64, n+1), nil, dst[:n]), tensor.ErrShape)
	assert.ErrorIs(t, replay.Rewards[float64](nil, make([]float64, n+1), dst[:n]), tensor.ErrShape)
}
