package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/require"
)

const testToken = "0123456789abcdef-test-token"

// testRegistry holds a few real verifiers and the test ones:
//
//	slow      waits for its context to end, then returns its error
//	stubborn  ignores its context and sleeps 1 s, then scores 1
//	selfstop  stops at its own budget: score 0, Timeout, a reason
//	panic     panics
//	gate      signals started, then waits for release (or its context)
func testRegistry(t *testing.T, started chan<- struct{}, release <-chan struct{}) *verifiers.Registry {
	t.Helper()
	reg := new(verifiers.Registry)
	for _, name := range []string{"math", "number", "choice", "format"} {
		f, err := verifiers.Default.Factory(name)
		require.NoError(t, err)
		must(t, reg.Register(name, f))
	}
	must(t, reg.Register("slow", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		<-ctx.Done()
		return verifiers.Result{}, ctx.Err()
	}))))
	must(t, reg.Register("stubborn", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		time.Sleep(time.Second)
		return verifiers.Result{Score: 1, Correct: true}, nil
	}))))
	must(t, reg.Register("selfstop", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		return verifiers.Result{Timeout: true, Reason: "timeout: own budget"}, nil
	}))))
	must(t, reg.Register("panic", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		panic("boom")
	}))))
	must(t, reg.Register("gate", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		if started != nil {
			started <- struct{}{}
		}
		select {
		case <-release:
			return verifiers.Result{Score: 1, Correct: true, Parsed: pred}, nil
		case <-ctx.Done():
			return verifiers.Result{}, ctx.Err()
		}
	}))))
	return reg
}

func must(t *testing.T, err error) {
	t.Helper()
	require.NoError(t, err)
}

// newTest starts a Server on the test registry behind an httptest server.
func newTest(t *testing.T, edit func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.Registry = testRegistry(t, nil, nil)
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// post sends body to ts+path and returns the status and the response.
func post(t *testing.T, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

// decode strictly decodes a JSON answer into v.
func decode(t *testing.T, body string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "answer %q", body)
}

// wantError checks a 4xx answer: the code and an {"error"} body holding
// substr.
func wantError(t *testing.T, code int, body string, wantCode int, substr string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("status %d, want %d (body %s)", code, wantCode, body)
		return
	}
	var e struct {
		Error string `json:"error"`
	}
	decode(t, body, &e)
	if !strings.Contains(e.Error, substr) {
		t.Errorf("error %q does not mention %q", e.Error, substr)
	}
}

// metricValue reads one sample of the /metrics text, -1 when absent.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	code, body := get(t, url+"/metrics")
	require.Equal(t, http.StatusOK, code, "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			must(t, json.Unmarshal([]byte(rest), &v))
			return v
		}
	}
	return -1
}

// slimeDetail is the ?detail=1 answer of /slime.
type slimeDetail struct {
	Reward   float64 `json:"reward"`
	Correct  bool    `json:"correct"`
	Timeout  bool    `json:"timeout"`
	Verifier string  `json:"verifier"`
	Parsed   string  `json:"parsed,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// lockedBuffer is a bytes.Buffer safe for a logger's writes and a test's
// reads at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
