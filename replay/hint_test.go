package replay_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hintBuffer tracks prompt 1 at R̄ 0.1 over a full window of 4, prompt 2
// at R̄ 0.1 over 3 rewards, and prompt 3 at R̄ 0.5.
func hintBuffer(t *testing.T) *replay.Buffer {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window = 100, 4 })
	for _, r := range []float64{0, 0, 0, 0.4} {
		b.Observe(1, r)
	}
	for _, r := range []float64{0, 0, 0.3} {
		b.Observe(2, r)
	}
	for _, r := range []float64{0, 1, 0, 1} {
		b.Observe(3, r)
	}
	return b
}

var hintCfg = replay.HintConfig{Below: 0.2, MinRewards: 4, MaxKL: 0.01, MaxPerPrompt: 2}

func TestHintTrigger(t *testing.T) {
	b := hintBuffer(t)
	calls := 0
	h, err := replay.NewHinter(b, hintCfg, replay.HintFunc(func(_ context.Context, p uint64) (string, error) {
		calls++
		return fmt.Sprintf("hint for %d", p), nil
	}))
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		prompt uint64
		kl     float64
		want   bool
	}{
		{"hard and stuck", 1, 0.001, true},
		{"still exploring", 1, 0.05, false},
		{"KL at the threshold", 1, 0.01, false},
		{"window not full yet", 2, 0.001, false},
		{"not hard", 3, 0.001, false},
		{"untracked", 4, 0, false},
		{"negative KL estimate", 1, -0.002, true},
	} {
		got, err := h.Triggered(c.prompt, c.kl)
		require.NoError(t, err, "%s: Triggered", c.name)
		assert.Equal(t, c.want, got, "%s: Triggered", c.name)
	}
	ctx := context.Background()
	for i, want := range []bool{true, true, false} { // capped at 2
		hint, ok, err := h.Hint(ctx, 1, 0)
		if err != nil || ok != want || (ok && hint != "hint for 1") {
			t.Errorf("hint %d: %q, %v, %v; want ok = %v", i, hint, ok, err, want)
		}
	}
	assert.Equal(t, 2, calls, "provider calls hints counted in stats; want 2")
	assert.Equal(t, 2, h.Hints(1), "provider calls hints counted in stats; want 2")
	assert.Equal(t, uint64(2), b.Stats().Hints, "provider calls hints counted in stats; want 2")
	if _, ok, _ := h.Hint(ctx, 3, 0); ok || calls != 2 {
		t.Error("a prompt that is not hard got a hint")
	}
	_, err = h.Triggered(1, math.NaN())
	assert.ErrorIs(t, err, tensor.ErrNonFinite, "NaN KL")
}

// TestHintFailureIsNotCounted: a failing provider or a cancelled context
// returns the error and leaves the prompt's allowance as it was.
func TestHintFailureIsNotCounted(t *testing.T) {
	b := hintBuffer(t)
	boom := errors.New("teacher model unavailable")
	fail := true
	h, _ := replay.NewHinter(b, hintCfg, replay.HintFunc(func(ctx context.Context, _ uint64) (string, error) {
		if fail {
			return "", boom
		}
		return "locate the speaker first", ctx.Err()
	}))
	_, ok, err := h.Hint(context.Background(), 1, 0)
	require.ErrorIs(t, err, boom, "failing provider: ok err, counted")
	assert.False(t, ok, "failing provider: ok err, counted")
	assert.Equal(t, 0, h.Hints(1), "failing provider: ok err, counted")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fail = false
	_, ok, err = h.Hint(ctx, 1, 0)
	require.ErrorIs(t, err, context.Canceled, "cancelled context: ok err, counted")
	assert.False(t, ok, "cancelled context: ok err, counted")
	assert.Equal(t, 0, h.Hints(1), "cancelled context: ok err, counted")
	hint, ok, err := h.Hint(context.Background(), 1, 0)
	require.NoError(t, err, "provider after the failures")
	assert.True(t, ok, "provider after the failures")
	assert.NotEmpty(t, hint, "provider after the failures")
	assert.Equal(t, 1, h.Hints(1), "provider after the failures")
}

// TestHintCapUnderConcurrency: many goroutines asking at once get exactly
// MaxPerPrompt hints.
func TestHintCapUnderConcurrency(t *testing.T) {
	b := hintBuffer(t)
	var calls atomic.Int32
	h, _ := replay.NewHinter(b, hintCfg, replay.HintFunc(func(context.Context, uint64) (string, error) {
		calls.Add(1)
		return "h", nil
	}))
	var wg sync.WaitGroup
	var given atomic.Int32
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := h.Hint(context.Background(), 1, 0); ok && err == nil {
				given.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(2), given.Load(), "hints given provider calls; want 2")
	assert.Equal(t, int32(2), calls.Load(), "hints given provider calls; want 2")
}

func TestHinterErrors(t *testing.T) {
	b := hintBuffer(t)
	p := replay.HintFunc(func(context.Context, uint64) (string, error) { return "", nil })
	for _, c := range []struct {
		name string
		b    *replay.Buffer
		cfg  replay.HintConfig
		p    replay.HintProvider
	}{
		{"nil buffer", nil, hintCfg, p},
		{"nil provider", b, hintCfg, nil},
		{"NaN threshold", b, replay.HintConfig{Below: math.NaN(), MinRewards: 1, MaxKL: 1, MaxPerPrompt: 1}, p},
		{"no rewards", b, replay.HintConfig{Below: 0.2, MinRewards: 0, MaxKL: 1, MaxPerPrompt: 1}, p},
		{"more rewards than W", b, replay.HintConfig{Below: 0.2, MinRewards: 5, MaxKL: 1, MaxPerPrompt: 1}, p},
		{"Inf KL", b, replay.HintConfig{Below: 0.2, MinRewards: 1, MaxKL: math.Inf(1), MaxPerPrompt: 1}, p},
		{"negative cap", b, replay.HintConfig{Below: 0.2, MinRewards: 1, MaxKL: 1, MaxPerPrompt: -1}, p},
	} {
		_, err := replay.NewHinter(c.b, c.cfg, c.p)
		assert.Error(t, err, "%s: no error", c.name)
	}
	assert.NoError(t, replay.DefaultHintConfig().Validate())
}
