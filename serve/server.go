package serve

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server answers the reward-service contract (docs/conformance.md#rlpost-serve)
// on the verifiers of its Config.Registry. It is an http.Handler: mount it
// in a program's own http.Server, or run it with Serve. Call Close when done
// with it.
type Server struct {
	cfg     Config
	metrics *metrics
	budget  *budget
	promh   http.Handler

	jobs        chan job
	workersDone sync.WaitGroup

	warns        warnLimiter
	allowedHosts map[string]struct{}
	allowAnyHost bool

	mu      sync.Mutex
	closed  bool
	active  sync.WaitGroup // requests past the closed check
	closeMu sync.Once
}

// New validates cfg and starts the worker pool.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		metrics: newMetrics(),
		budget:  newBudget(cfg.MaxInflight, cfg.clientShare()),
		warns:   warnLimiter{burst: 10},
		// A short queue, 16 items per worker: long enough that the
		// workers rarely wait on a request's goroutine (12 % less
		// overhead per item than one per worker, BenchmarkOverhead), short
		// enough that a one-item request waits behind at most that many
		// items of a large batch; the rest wait in their request, where a
		// cancelled request drops them.
		jobs: make(chan job, 16*cfg.Workers),
	}
	s.allowedHosts, s.allowAnyHost = allowedHostSet(cfg.AllowedHosts)
	s.promh = promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	s.metrics.workers.Set(float64(cfg.Workers))
	s.workersDone.Add(cfg.Workers)
	for range cfg.Workers {
		go s.worker()
	}
	return s, nil
}

// Close refuses new requests (503), waits for those in flight, and stops
// the workers. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeMu.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.active.Wait()
		close(s.jobs)
	})
	return nil
}

// enter registers a request unless the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// Endpoint names, the "endpoint" label of the metrics.
const (
	epVerify   = "verify"
	epOpenRLHF = "openrlhf"
	epSlime    = "slime"
	epHealthz  = "healthz"
	epMetrics  = "metrics"
	epOther    = "other"
)

// ServeHTTP routes a request, after the bearer-token check when a token is
// configured.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.metrics.requestsInFlight.Inc()
	defer s.metrics.requestsInFlight.Dec()
	ep := endpointOf(r.URL.Path)
	code := s.route(w, r, ep)
	s.metrics.requests.WithLabelValues(ep, strconv.Itoa(code)).Inc()
	s.metrics.requestSeconds.WithLabelValues(ep).Observe(time.Since(start).Seconds())
}

func endpointOf(path string) string {
	switch path {
	case "/verify":
		return epVerify
	case "/openrlhf":
		return epOpenRLHF
	case "/slime":
		return epSlime
	case "/healthz":
		return epHealthz
	case "/metrics":
		return epMetrics
	}
	return epOther
}

// route answers the request and returns the status code it wrote. The
// checks run in this order: Host, Origin, token, method, Content-Type,
// body size and rate, body shape; each refusal is counted by its reason
// and logged.
func (s *Server) route(w http.ResponseWriter, r *http.Request, ep string) int {
	if !s.hostAllowed(r) {
		return s.failUnread(w, r, &httpError{http.StatusForbidden, ReasonHost,
			fmt.Sprintf("Host %q is not this server's; use 127.0.0.1 or localhost, or allow the name with -allow-host", truncate(r.Host, 100))})
	}
	if !originAllowed(r) {
		return s.failUnread(w, r, &httpError{http.StatusForbidden, ReasonOrigin, "cross-origin request refused (Origin or Sec-Fetch-Site header from a web page)"})
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rlpost"`)
		return s.failUnread(w, r, &httpError{http.StatusUnauthorized, ReasonUnauthorized, "missing or wrong token: send Authorization: Bearer TOKEN, or TOKEN as the password of the URL (http://rlpost:TOKEN@host/...)"})
	}
	if !s.enter() {
		return s.failUnread(w, r, &httpError{http.StatusServiceUnavailable, ReasonShuttingDown, "server is shutting down"})
	}
	defer s.active.Done()
	switch ep {
	case epHealthz, epMetrics:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			return s.failUnread(w, r, &httpError{http.StatusMethodNotAllowed, ReasonMethod, r.Method + " " + r.URL.Path + "; use GET"})
		}
		if ep == epMetrics {
			s.promh.ServeHTTP(w, r)
			return http.StatusOK
		}
		return s.reply(w, r, http.StatusOK, []byte(`{"status":"ok"}`))
	case epOther:
		return s.failUnread(w, r, &httpError{http.StatusNotFound, ReasonMethod, fmt.Sprintf("no endpoint %q; have POST /verify, /openrlhf, /slime, GET /healthz, /metrics", truncate(r.URL.Path, 100))})
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return s.failUnread(w, r, &httpError{http.StatusMethodNotAllowed, ReasonMethod, r.Method + " " + r.URL.Path + "; use POST with a JSON body"})
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		w.Header().Set("Accept-Post", "application/json")
		return s.failUnread(w, r, &httpError{http.StatusUnsupportedMediaType, ReasonContentType,
			fmt.Sprintf("Content-Type %q; send application/json", truncate(ct, 100))})
	}
	body, release, herr := s.readBody(w, r)
	if herr != nil {
		return s.failUnread(w, r, herr)
	}
	defer release()
	var resp []byte
	switch ep {
	case epVerify:
		resp, herr = s.verify(r.Context(), body)
	case epOpenRLHF:
		resp, herr = s.openRLHF(r.Context(), body)
	case epSlime:
		resp, herr = s.slime(r.Context(), body, r.URL.Query().Get("detail"))
	}
	if herr != nil {
		return s.fail(w, r, herr)
	}
	return s.reply(w, r, http.StatusOK, resp)
}

// truncate shortens a client's text for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// authorized compares the token in constant time. Besides "Bearer
// <token>", it takes HTTP Basic credentials whose password is the token
// (the user name is ignored): OpenRLHF and slime cannot set headers, but
// both send the credentials of a URL such as
// http://rlpost:TOKEN@host:8700/openrlhf as Basic auth.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok {
		return false
	}
	switch {
	case equalFoldASCII(scheme, "Bearer"):
	case equalFoldASCII(scheme, "Basic"):
		dec, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return false
		}
		_, pass, ok := strings.Cut(string(dec), ":")
		if !ok {
			return false
		}
		cred = pass
	default:
		return false
	}
	return subtle.ConstantTimeCompare([]byte(cred), []byte(s.cfg.Token)) == 1
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// Serve answers HTTP on ln until ctx is done, then shuts down gracefully:
// it stops accepting, lets the requests in flight finish (up to
// Config.ShutdownTimeout, after which their connections are closed) and
// returns nil. It does not Close s. Connection timeouts are Config's.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		// No ReadTimeout or WriteTimeout: they would bound the whole
		// exchange, scoring included, and cancel a long batch. The body
		// read and the response write get their own deadlines per request
		// (readBody, reply).
		IdleTimeout:    s.cfg.IdleTimeout,
		MaxHeaderBytes: 64 << 10,
	}
	if s.cfg.Logger != nil {
		hs.ErrorLog = slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		hs.Close()
		err = fmt.Errorf("serve: requests still in flight after %v: %w", s.cfg.ShutdownTimeout, err)
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// CheckBind refuses an address that is not loopback when no token is set:
// the service runs verifiers on whatever it is sent, so it is never open
// to a network without authentication. Loopback is "localhost", an IP in
// 127.0.0.0/8 or ::1; an empty host (all interfaces) and any other name
// count as public.
func CheckBind(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("serve: address %q: %w", addr, err)
	}
	if haveToken || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("serve: refusing to listen on %q without a token: it is not a loopback address; give a token (-token-file) or bind 127.0.0.1", addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
