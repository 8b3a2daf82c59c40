package replay

import (
	"context"
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// HintProvider returns the hint for a prompt: in AVATAR a text written
// beforehand by a teacher model from the full problem context (§4.1,
// Fig. 13), "first locate the object making the sound, then count", say.
// Implementations should return promptly when ctx is done.
type HintProvider interface {
	Hint(ctx context.Context, prompt uint64) (string, error)
}

// HintFunc adapts a function to HintProvider.
type HintFunc func(ctx context.Context, prompt uint64) (string, error)

// Hint calls f.
func (f HintFunc) Hint(ctx context.Context, prompt uint64) (string, error) { return f(ctx, prompt) }

// HintConfig sets when a prompt gets a hint. AVATAR triggers one "when a
// prompt remains hard (low R̄(q)) and the policy stops exploring (low KL)"
// (§4.1) without giving numbers; the defaults are this package's.
type HintConfig struct {
	// Below is h: R̄(q) < Below counts as hard. Default 0.2, on rewards in
	// [0, 1].
	Below float64
	// MinRewards is how many rewards R̄(q) must average before the prompt
	// counts as staying hard rather than having started badly. Default W.
	MinRewards int
	// MaxKL is k: a KL(π_θ‖π_θoff) estimate below it means the policy has
	// stopped moving away from what it did on the prompt. Default 0.01.
	MaxKL float64
	// MaxPerPrompt caps the hints one prompt receives. Default 3.
	MaxPerPrompt int
}

// DefaultHintConfig returns h = 0.2, k = 0.01, a full window and 3 hints.
func DefaultHintConfig() HintConfig {
	return HintConfig{Below: 0.2, MinRewards: DefaultWindow, MaxKL: 0.01, MaxPerPrompt: 3}
}

// maxHints is what a prompt's counter holds.
const maxHints = math.MaxUint16

// Validate reports the first field of c that is out of its domain.
func (c HintConfig) Validate() error {
	switch {
	case c == HintConfig{}:
		return tensor.Errorf(tensor.ErrRange, "HintConfig", nil, "the zero value (no hint ever); start from replay.DefaultHintConfig()")
	case !isFinite(c.Below):
		return tensor.Errorf(tensor.ErrNonFinite, "HintConfig.Below", nil, "%v", c.Below)
	case c.MinRewards < 1:
		return tensor.Errorf(tensor.ErrRange, "HintConfig.MinRewards", nil, "%d, want ≥ 1", c.MinRewards)
	case !isFinite(c.MaxKL):
		return tensor.Errorf(tensor.ErrNonFinite, "HintConfig.MaxKL", nil, "%v", c.MaxKL)
	case c.MaxPerPrompt < 0 || c.MaxPerPrompt > maxHints:
		return tensor.Errorf(tensor.ErrRange, "HintConfig.MaxPerPrompt", nil, "%d, want 0..%d", c.MaxPerPrompt, maxHints)
	}
	return nil
}

// Hinter decides when a prompt gets a hint and fetches it. Hint counts live
// with the prompt in the buffer's VCRS (and its snapshots), so a prompt the
// VCRS forgets starts again from 0. It is safe for concurrent use.
type Hinter struct {
	buf      *Buffer
	cfg      HintConfig
	provider HintProvider
}

// NewHinter returns a Hinter over buf's VCRS.
func NewHinter(buf *Buffer, cfg HintConfig, p HintProvider) (*Hinter, error) {
	if buf == nil {
		return nil, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "buf", nil, "nil buffer"))
	}
	if p == nil {
		return nil, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "provider", nil, "nil HintProvider"))
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if w := buf.cfg.Window; cfg.MinRewards > w {
		return nil, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "HintConfig.MinRewards", nil,
			"%d, but R̄ averages at most W = %d rewards: no prompt could trigger", cfg.MinRewards, w))
	}
	return &Hinter{buf: buf, cfg: cfg, provider: p}, nil
}

// Triggered reports whether prompt meets the trigger: tracked with at least
// MinRewards rewards, R̄ < Below, kl < MaxKL, and fewer than MaxPerPrompt
// hints so far. kl is the caller's estimate of KL(π_θ‖π_θoff) on the
// prompt, such as the mean of Objective.OffKL over its replayed rows.
func (h *Hinter) Triggered(prompt uint64, kl float64) (bool, error) {
	if math.IsNaN(kl) {
		return false, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrNonFinite, "kl", nil, "NaN"))
	}
	h.buf.mu.Lock()
	defer h.buf.mu.Unlock()
	_, ok := h.trigger(prompt, kl)
	return ok, nil
}

// trigger returns the prompt's slot if it meets the trigger; the buffer's
// lock is held.
func (h *Hinter) trigger(prompt uint64, kl float64) (int32, bool) {
	v := h.buf.vcrs
	s, ok := v.index[prompt]
	if !ok {
		return none, false
	}
	sl := v.slot(s)
	return s, int(sl.n) >= h.cfg.MinRewards && sl.mean < h.cfg.Below &&
		kl < h.cfg.MaxKL && int(sl.hints) < h.cfg.MaxPerPrompt
}

// Hint returns a hint for prompt if it meets the trigger, counting it
// against the prompt's cap; ok is false when it does not. The provider is
// called without the buffer's lock held; if it fails, or ctx is done first,
// the hint is not counted and the error is returned.
func (h *Hinter) Hint(ctx context.Context, prompt uint64, kl float64) (hint string, ok bool, err error) {
	if math.IsNaN(kl) {
		return "", false, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrNonFinite, "kl", nil, "NaN"))
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	b := h.buf
	b.mu.Lock()
	s, ok := h.trigger(prompt, kl)
	if ok {
		b.vcrs.slotMut(s).hints++ // reserved, so concurrent calls respect the cap
	}
	b.mu.Unlock()
	if !ok {
		return "", false, nil
	}
	hint, err = h.provider.Hint(ctx, prompt)
	if err == nil {
		err = ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		// Give the reservation back if the prompt still holds it.
		if s, tracked := b.vcrs.index[prompt]; tracked && b.vcrs.slot(s).hints > 0 {
			b.vcrs.slotMut(s).hints--
		}
		return "", false, fmt.Errorf("replay: hint for prompt %d: %w", prompt, err)
	}
	b.c.hints++
	return hint, true, nil
}

// Hints returns how many hints prompt has received (0 if not tracked).
func (h *Hinter) Hints(prompt uint64) int {
	h.buf.mu.Lock()
	defer h.buf.mu.Unlock()
	if s, ok := h.buf.vcrs.index[prompt]; ok {
		return int(h.buf.vcrs.slot(s).hints)
	}
	return 0
}
