package serve

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlpost/rlpost/verifiers"
)

// Reason kinds: why an item could not be scored (it then scores 0.0 and
// carries the kind and the full error text in its detail), or why a request
// was refused as a whole. They are the "reason" label of the metrics, so
// they form a fixed set: a client cannot mint new label values.
const (
	// Item reasons.
	ReasonBadItem         = "bad_item"         // a /verify item that is not a verify request
	ReasonBadLabel        = "bad_label"        // a label of the wrong JSON type or with unknown keys
	ReasonUnknownVerifier = "unknown_verifier" // a verifier the registry does not hold
	ReasonParamOverCap    = "param_over_cap"   // a params limit above the operator's cap
	ReasonBadParams       = "bad_params"       // params the verifier refused
	ReasonBadReference    = "bad_reference"    // a gold the verifier could not read
	ReasonTooLarge        = "too_large"        // an item or a field over a size limit
	ReasonPanic           = "panic"            // the verifier panicked
	ReasonVerifierError   = "verifier_error"   // any other verifier error

	// Request reasons.
	ReasonBadJSON        = "bad_json"        // a body that is not the endpoint's JSON
	ReasonBodyTooLarge   = "body_too_large"  // over -max-body, -max-items or the nesting limit
	ReasonSlowBody       = "slow_body"       // a body slower than -min-body-rate
	ReasonBusy           = "busy"            // no room in the in-flight budget in time
	ReasonContentType    = "content_type"    // a scoring POST that is not application/json
	ReasonHost           = "host"            // a Host header not allowed (DNS rebinding)
	ReasonOrigin         = "origin"          // a cross-origin browser request
	ReasonUnauthorized   = "unauthorized"    // a missing or wrong token
	ReasonMethod         = "method"          // the wrong method or path
	ReasonShuttingDown   = "shutting_down"   // arrived after Close
	ReasonClientCanceled = "client_canceled" // the client left while waiting for room
)

// itemError is an item that cannot be scored: its reason kind and what was
// wrong.
type itemError struct {
	kind string
	err  error
}

func (e *itemError) Error() string { return e.err.Error() }
func (e *itemError) Unwrap() error { return e.err }

func itemErr(kind string, format string, a ...any) error {
	return &itemError{kind: kind, err: fmt.Errorf(format, a...)}
}

// reasonOf classifies an item's error into a reason kind.
func reasonOf(err error) string {
	var ie *itemError
	switch {
	case errors.As(err, &ie):
		return ie.kind
	case errors.Is(err, verifiers.ErrUnknown):
		return ReasonUnknownVerifier
	case errors.Is(err, verifiers.ErrParam):
		return ReasonBadParams
	case errors.Is(err, verifiers.ErrSyntax):
		return ReasonBadReference
	case errors.Is(err, verifiers.ErrTooLarge):
		return ReasonTooLarge
	}
	return ReasonVerifierError
}

// warnLimiter lets through at most burst WARN lines per second for each
// reason kind and counts the rest, so that a client sending a million bad
// items can neither flood the log nor hide the lines of other reasons; the
// next line of a kind that passes says how many were dropped.
type warnLimiter struct {
	mu    sync.Mutex
	burst int
	kinds map[string]*warnWindow // keyed by reason kind, a fixed set
}

type warnWindow struct {
	start         time.Time
	used, dropped int
}

// allow reports whether a line of kind may be written now, and how many
// lines of that kind were dropped since the last one written.
func (l *warnLimiter) allow(kind string, now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kinds == nil {
		l.kinds = map[string]*warnWindow{}
	}
	w := l.kinds[kind]
	if w == nil {
		w = &warnWindow{start: now}
		l.kinds[kind] = w
	}
	if now.Sub(w.start) >= time.Second {
		w.start, w.used = now, 0
	}
	if w.used >= l.burst {
		w.dropped++
		return false, 0
	}
	w.used++
	dropped, w.dropped = w.dropped, 0
	return true, dropped
}

// warn writes a WARN line, rate-limited per reason kind.
func (s *Server) warn(kind, msg string, args ...any) {
	if s.cfg.Logger == nil {
		return
	}
	ok, dropped := s.warns.allow(kind, time.Now())
	if !ok {
		return
	}
	args = append(args, "reason", kind)
	if dropped > 0 {
		args = append(args, "dropped_before", dropped)
	}
	s.cfg.Logger.Warn(msg, args...)
}
