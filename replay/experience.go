package replay

import (
	"errors"
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Experience is one stored response: (q, o, π_θoff) of AVATAR §4.1 with its
// reward.
//
// The buffer keeps the slices it is given, without copying: they must not
// be modified after Add. Sample hands out the same slices, so readers must
// not modify them either.
type Experience struct {
	// Prompt identifies q. Callers with string ids hash them with a hash
	// that is stable across processes (FNV-1a, say), so that snapshots stay
	// meaningful.
	Prompt uint64
	// Tokens are the response's token ids; optional, opaque to the buffer.
	Tokens []int32
	// Logp are the behaviour policy's log-probabilities of the response
	// tokens the loss trains on, in order: log π_θoff of Eq. 4. Objective
	// lays them on the valid positions of the caller's mask row.
	Logp []float32
	// Reward is R(o), at most MaxAbsReward in magnitude.
	Reward float64
	// Version is the policy version that generated the response (≥ 0).
	Version int64
	// Payload is anything else the caller needs back (the prompt text, an
	// image reference); it is saved in snapshots.
	Payload []byte
}

// Limits on one experience, far above any real response, so that a
// snapshot's lengths can be checked.
const (
	maxTokens  = 1 << 26
	maxPayload = 1 << 30
)

// validate checks e, the i-th of a group (i < 0 for a lone experience).
// The name is built only for an error, so that Add does not allocate.
func (e *Experience) validate(i int) error {
	if err := e.check(); err != nil {
		name := "experience"
		if i >= 0 {
			name = fmt.Sprintf("experiences[%d]", i)
		}
		var ae *tensor.ArgError
		if errors.As(err, &ae) {
			ae.Arg = name + "." + ae.Arg
		}
		return err
	}
	return nil
}

func (e *Experience) check() error {
	if err := checkReward("reward", e.Reward); err != nil {
		return err
	}
	if e.Version < 0 {
		return tensor.Errorf(tensor.ErrRange, "version", nil, "%d, want ≥ 0", e.Version)
	}
	if len(e.Logp) == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "logp", nil, "no token to train on")
	}
	if len(e.Logp) > maxTokens || len(e.Tokens) > maxTokens {
		return tensor.Errorf(tensor.ErrRange, "logp", nil, "%d log-probs and %d tokens, at most %d each", len(e.Logp), len(e.Tokens), maxTokens)
	}
	if len(e.Payload) > maxPayload {
		return tensor.Errorf(tensor.ErrRange, "payload", nil, "%d bytes, at most %d", len(e.Payload), maxPayload)
	}
	return tensor.CheckFiniteVec("logp", e.Logp)
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Receipt says what Add did with an experience.
type Receipt struct {
	// ID numbers every experience offered to the buffer, in order of
	// arrival; IDs are never reused.
	ID uint64
	// Tier is where the experience went (meaningless when Stale).
	Tier Tier
	// Stale is true when the experience was older than the staleness guard
	// allows and was dropped on arrival.
	Stale bool
}

// Sampled is an experience handed out by Sample.
type Sampled struct {
	Experience
	// ID is the experience's Receipt.ID.
	ID uint64
	// Tier is the tier it was stored in.
	Tier Tier
	// Age is the current policy version minus the experience's version.
	Age int64
	// Baseline is R̄(q) of Eq. 11: the prompt's current VCRS, or the value
	// it had when the experience was stored if the tracker has forgotten
	// the prompt since.
	Baseline float64
	// Fallback is true for an experience of another prompt drawn because
	// SampleOptions.Prompt had too few (see SampleOptions.NoFallback).
	Fallback bool
}

// DropReason says why an experience left the buffer.
type DropReason uint8

const (
	// Evicted: its tier was full and it was the tier's oldest.
	Evicted DropReason = iota
	// Expired: SetVersion made it stale.
	Expired
	// StaleOnArrival: it was stale when added and never stored.
	StaleOnArrival
)

var dropNames = [...]string{"evicted", "expired", "stale on arrival"}

func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", int(r))
}

// Dropped describes an experience that left the buffer or never entered it.
type Dropped struct {
	Experience
	ID     uint64
	Tier   Tier // the tier it left; Easy for StaleOnArrival
	Reason DropReason
}
