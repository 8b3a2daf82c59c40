package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// MinTokenLen is the shortest bearer token New accepts: 16 bytes is 128 bits
// when drawn from a byte-wide alphabet, and far more than a guessing client
// gets through at any request rate.
const MinTokenLen = 16

// ErrConfig is the kind of every error New returns for a bad Config.
var ErrConfig = errors.New("bad config")

// Config configures a Server. Start from DefaultConfig: a zero field is an
// error, not a silent default, except Token (empty: no authentication) and
// Logger (nil: no log).
type Config struct {
	// Workers is the number of verifier calls that run at once, shared by
	// all requests. Default: every core (runtime.GOMAXPROCS).
	Workers int
	// Timeout bounds one item's verifier call, counted from when a worker
	// takes it (time queued behind other items does not count). An item
	// over it scores 0 with "timeout": true. Default 2 s.
	Timeout time.Duration
	// MaxBody bounds a request body in bytes; a larger one is answered 413
	// without being read. Default 32 MiB.
	MaxBody int64
	// MaxItems bounds the items of one /verify or /openrlhf request; more
	// are answered 413. Default 65536.
	MaxItems int
	// MaxInflight bounds the body bytes of all requests being decoded or
	// scored at once (a request without a Content-Length counts as
	// MaxBody). Requests over it wait for earlier ones to finish, so memory
	// stays near 5·MaxInflight (measured peak RSS) whatever the clients send. Must be at least
	// MaxBody. Default 4·MaxBody.
	MaxInflight int64
	// Verifier is the registry name /openrlhf and /slime use for items
	// whose label does not name one. Default "math".
	Verifier string
	// Registry holds the verifiers requests may name. Default
	// verifiers.Default.
	Registry *verifiers.Registry
	// Token, when not empty, is the bearer token every request must carry
	// (Authorization: Bearer <Token>); at least MinTokenLen bytes.
	Token string
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout bound a
	// client's time to send its headers, to send the whole request, to
	// read the response once it is ready, and to keep an idle connection
	// open. Defaults 10 s, 2 min, 2 min, 2 min. They are used by Serve;
	// WriteTimeout is applied per response, after scoring, so a long batch
	// is never cut off while it is scored.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds how long Serve waits for in-flight requests
	// once its context is done. Default 1 min.
	ShutdownTimeout time.Duration
	// Logger receives start, stop and server-error lines; nil logs nothing.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	const maxBody = 32 << 20
	return Config{
		Workers:           runtime.GOMAXPROCS(0),
		Timeout:           2 * time.Second,
		MaxBody:           maxBody,
		MaxItems:          1 << 16,
		MaxInflight:       4 * maxBody,
		Verifier:          "math",
		Registry:          verifiers.Default,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ShutdownTimeout:   time.Minute,
	}
}

func configErr(field string, format string, a ...any) error {
	return fmt.Errorf("serve: %w (start from serve.DefaultConfig()): %w", ErrConfig,
		tensor.Errorf(tensor.ErrRange, "Config."+field, nil, format, a...))
}

// validate checks every field; see Config.
func (c *Config) validate() error {
	switch {
	case c.Workers < 1:
		return configErr("Workers", "%d, want ≥ 1", c.Workers)
	case c.Timeout <= 0:
		return configErr("Timeout", "%v, want > 0", c.Timeout)
	case c.MaxBody <= 0:
		return configErr("MaxBody", "%d, want > 0", c.MaxBody)
	case c.MaxItems < 1:
		return configErr("MaxItems", "%d, want ≥ 1", c.MaxItems)
	case c.MaxInflight < c.MaxBody:
		return configErr("MaxInflight", "%d, want ≥ MaxBody (%d)", c.MaxInflight, c.MaxBody)
	case c.Registry == nil:
		return configErr("Registry", "nil")
	case c.Token != "" && len(c.Token) < MinTokenLen:
		return configErr("Token", "%d bytes, want ≥ %d", len(c.Token), MinTokenLen)
	case c.ReadHeaderTimeout <= 0 || c.ReadTimeout <= 0 || c.WriteTimeout <= 0 || c.IdleTimeout <= 0:
		return configErr("ReadHeaderTimeout", "HTTP timeouts %v, %v, %v, %v, want all > 0",
			c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout)
	case c.ShutdownTimeout <= 0:
		return configErr("ShutdownTimeout", "%v, want > 0", c.ShutdownTimeout)
	}
	if _, err := c.Registry.Factory(c.Verifier); err != nil {
		return fmt.Errorf("serve: %w: Config.Verifier: %w", ErrConfig, err)
	}
	return nil
}
