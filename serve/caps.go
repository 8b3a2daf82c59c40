package serve

import (
	"fmt"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/rlpost/rlpost/verifiers/mathverify"
)

// Caps are the operator's ceilings on the work limits a request may set
// through an item's params: a client may lower a limit, never raise it
// above its cap. Each cap bounds the params key of the same meaning in
// package mathverify (ParseOptions); an item asking for more scores 0.0 with
// reason "param_over_cap". A zero field is an error (start from
// DefaultCaps, whose values are mathverify's defaults, so that by default a
// client can only lower a limit).
type Caps struct {
	// MaxFactorial caps "max_factorial", the largest n for which n! and
	// binomials are computed. Default 1000.
	MaxFactorial int
	// MaxExponent caps "max_exponent", the largest power computed
	// exactly. Default 10000.
	MaxExponent int
	// MaxDepth caps "max_depth", the nesting of one answer. Default 64.
	MaxDepth int
	// MaxInputLen caps "max_input_len", the bytes of gold and of pred.
	// Default 1 MiB.
	MaxInputLen int
	// MaxVerifyTimeout caps "timeout_ms", the verifier's own time budget
	// per call; "timeout_ms": 0 (no budget of its own) counts as above
	// it. Default 30 ms. Config.Timeout bounds every call in any case.
	MaxVerifyTimeout time.Duration
}

// DefaultCaps returns mathverify's default limits as caps.
func DefaultCaps() Caps {
	d := mathverify.DefaultOptions()
	return Caps{
		MaxFactorial:     d.MaxFactorial,
		MaxExponent:      d.MaxExponent,
		MaxDepth:         d.MaxDepth,
		MaxInputLen:      d.MaxInputLen,
		MaxVerifyTimeout: d.Timeout,
	}
}

func (c *Caps) validate() error {
	switch {
	case c.MaxFactorial < 1:
		return configErr("Caps.MaxFactorial", "%d, want ≥ 1", c.MaxFactorial)
	case c.MaxExponent < 1:
		return configErr("Caps.MaxExponent", "%d, want ≥ 1", c.MaxExponent)
	case c.MaxDepth < 1:
		return configErr("Caps.MaxDepth", "%d, want ≥ 1", c.MaxDepth)
	case c.MaxInputLen < 1:
		return configErr("Caps.MaxInputLen", "%d, want ≥ 1", c.MaxInputLen)
	case c.MaxVerifyTimeout <= 0:
		return configErr("Caps.MaxVerifyTimeout", "%v, want > 0", c.MaxVerifyTimeout)
	}
	return nil
}

// check refuses params that raise a limit above its cap. A value of the
// wrong type is left to the verifier, which reports it as bad_params.
func (c *Caps) check(p verifiers.Params) error {
	if len(p) == 0 {
		return nil
	}
	for _, k := range [...]struct {
		key, flag string
		cap       int
	}{
		{"max_factorial", "-max-factorial", c.MaxFactorial},
		{"max_exponent", "-max-exponent", c.MaxExponent},
		{"max_depth", "-max-depth", c.MaxDepth},
		{"max_input_len", "-max-input-len", c.MaxInputLen},
	} {
		if v, err := p.Int(k.key, 0); err == nil && v > k.cap {
			return itemErr(ReasonParamOverCap, "params[%q] = %d is above the operator's cap %d (%s)", k.key, v, k.cap, k.flag)
		}
	}
	if _, ok := p["timeout_ms"]; ok {
		ms, err := p.Float("timeout_ms", 0)
		capMs := float64(c.MaxVerifyTimeout) / float64(time.Millisecond)
		if err == nil && (ms == 0 || ms > capMs) {
			what := fmt.Sprintf("%v", ms)
			if ms == 0 {
				what = "0 (no limit)"
			}
			return itemErr(ReasonParamOverCap, "params[\"timeout_ms\"] = %s is above the operator's cap %v ms (-max-verify-timeout)", what, capMs)
		}
	}
	return nil
}
