package grpo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every value of every enumeration has a name that parses back to it, and
// the names of one enumeration are distinct.
func TestNamesRoundTrip(t *testing.T) {
	for e := range numEstimators {
		got, err := ParseEstimator(e.String())
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}
	for _, s := range []Scale{ScaleGroup, ScaleBatch, ScaleNone} {
		got, err := ParseScale(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	for _, s := range []Std{Unbiased, Population} {
		got, err := ParseStd(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	for _, s := range []Singleton{SingletonZero, SingletonReward} {
		got, err := ParseSingleton(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	for _, a := range []GPGAlpha{GPGValid, GPGNonzero} {
		got, err := ParseGPGAlpha(a.String())
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	for _, names := range [][]string{estimatorNames[:], scaleNames[:], stdNames[:], singletonNames[:], gpgAlphaNames[:]} {
		seen := map[string]bool{}
		for _, n := range names {
			assert.NotEmpty(t, n)
			assert.False(t, seen[n], "name %q twice", n)
			seen[n] = true
		}
	}
	assert.Equal(t, "Estimator(99)", Estimator(99).String())
	assert.Equal(t, "reinforce_plus_plus_baseline", ReinforcePlusPlusBaseline.String())
}
