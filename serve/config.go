package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
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
	// MaxInflight bounds the body bytes of all requests being read,
	// decoded or scored at once. A body is charged as it arrives (64 KiB
	// first, then the rest of its Content-Length, or doubling when it has
	// none), so a client that announces a large body and stalls holds
	// 64 KiB, not its announced size. Requests over it wait for earlier
	// ones to finish. A body is checked for its item count and nesting
	// before it is decoded, and decoded in place, so the heap stays under
	// 2·MaxInflight whatever the clients send (BENCHMARKS.md). Must be at
	// least MaxBody. Default 4·MaxBody.
	MaxInflight int64
	// MaxClientInflight is one client's share of MaxInflight: the body
	// bytes held by the requests of one remote IP address; more wait,
	// without holding back other clients. Clients behind one proxy, or
	// all on loopback, are one client. 0 means MaxInflight − MaxBody, but
	// at least MaxBody (3·MaxBody with the other defaults); otherwise it
	// must lie in [MaxBody, MaxInflight]. Default 0.
	MaxClientInflight int64
	// MinBodyRate and BodyGrace cut slow bodies: after BodyGrace, a body
	// must have arrived at MinBodyRate bytes per second on average, or the
	// request is answered 408, its connection closed and its budget
	// returned (counted as reason "slow_body"). Defaults 64 KiB/s and
	// 10 s. ReadTimeout bounds the whole body in any case.
	MinBodyRate int64
	BodyGrace   time.Duration
	// AllowedHosts are the Host names, besides loopback names and the
	// address a connection arrived on, that requests may carry (a name
	// clients or a load balancer use); "*" allows any Host. Other Hosts
	// are answered 403 (a DNS-rebinding page sends its own name). Default
	// none.
	AllowedHosts []string
	// Caps are the ceilings on the limits a request may raise through
	// params. Default DefaultCaps().
	Caps Caps
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

// clientShare is MaxClientInflight with its zero value resolved.
func (c *Config) clientShare() int64 {
	if c.MaxClientInflight != 0 {
		return c.MaxClientInflight
	}
	return max(c.MaxBody, c.MaxInflight-c.MaxBody)
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
		MinBodyRate:       64 << 10,
		BodyGrace:         10 * time.Second,
		Caps:              DefaultCaps(),
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
	case c.MaxClientInflight != 0 && (c.MaxClientInflight < c.MaxBody || c.MaxClientInflight > c.MaxInflight):
		return configErr("MaxClientInflight", "%d, want in [MaxBody, MaxInflight] = [%d, %d]", c.MaxClientInflight, c.MaxBody, c.MaxInflight)
	case c.MinBodyRate <= 0:
		return configErr("MinBodyRate", "%d, want > 0", c.MinBodyRate)
	case c.BodyGrace <= 0:
		return configErr("BodyGrace", "%v, want > 0", c.BodyGrace)
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
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ \t") {
			return configErr(fmt.Sprintf("AllowedHosts[%d]", i), "%q, want a host name, an address or \"*\"", h)
		}
	}
	if err := c.Caps.validate(); err != nil {
		return err
	}
	if _, err := c.Registry.Factory(c.Verifier); err != nil {
		return fmt.Errorf("serve: %w: Config.Verifier: %w", ErrConfig, err)
	}
	return nil
}
