package serve

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimedOutItemsScoreZeroAndAreCounted(t *testing.T) {
	_, ts := newTest(t, func(c *Config) { c.Timeout = 50 * time.Millisecond })
	// "slow" honours its context; "stubborn" ignores it for a second, and
	// must still be answered at the deadline.
	start := time.Now()
	code, resp := post(t, ts.URL+"/verify", `{"items": [
		{"verifier": "slow", "pred": "x"},
		{"verifier": "choice", "gold": "A", "pred": "A"},
		{"verifier": "stubborn", "pred": "x"}]}`)
	require.Equal(t, http.StatusOK, code, "status: %s", resp)
	if el := time.Since(start); el > 700*time.Millisecond {
		t.Errorf("answer took %v; a verifier ignoring its context held the request past its deadline", el)
	}
	var got verifyAnswer
	decode(t, resp, &got)
	for _, i := range []int{0, 2} {
		r := got.Results[i]
		if r.Error != "" || r.Score == nil || *r.Score != 0 || *r.Correct || !r.Timeout || !strings.Contains(r.Reason, "timeout") {
			t.Errorf("item %d: %+v, want score 0 with timeout", i, r)
		}
	}
	if r := got.Results[1]; r.Timeout || *r.Score != 1 {
		t.Errorf("item 1: %+v", r)
	}

	code, resp = post(t, ts.URL+"/openrlhf", `{"query": ["a", "b"], "labels": ["{\"verifier\": \"slow\"}", "{\"verifier\": \"choice\", \"gold\": \"b\"}"]}`)
	var o openRLHFAnswer
	decode(t, resp, &o)
	assert.Equal(t, 200, code, "openrlhf with a timeout %s", resp)
	assert.Equal(t, float64(0), o.Rewards[0], "openrlhf with a timeout %s", resp)
	assert.Equal(t, float64(1), o.ExtraLogs["timeout"][0], "openrlhf with a timeout %s", resp)
	assert.Equal(t, float64(0), o.ExtraLogs["error"][0], "openrlhf with a timeout %s", resp)
	assert.Equal(t, float64(1), o.Rewards[1], "openrlhf with a timeout %s", resp)
	var d slimeDetail
	code, resp = post(t, ts.URL+"/slime?detail=1", `{"response": "x", "label": {"verifier": "slow"}}`)
	decode(t, resp, &d)
	assert.Equal(t, 200, code, "slime with a timeout %s", resp)
	assert.Equal(t, float64(0), d.Reward, "slime with a timeout %s", resp)
	assert.True(t, d.Timeout, "slime with a timeout %s", resp)
	assert.NotEmpty(t, d.Reason, "slime with a timeout %s", resp)
	// A verifier that stops itself at its own budget counts the same.
	code, resp = post(t, ts.URL+"/verify", `{"items": [{"verifier": "selfstop", "pred": "x"}]}`)
	got = verifyAnswer{}
	decode(t, resp, &got)
	if r := got.Results[0]; code != 200 || !r.Timeout || r.Reason != "timeout: own budget" || *r.Score != 0 {
		t.Errorf("verifier's own timeout: %d %s", code, resp)
	}
	code, resp = post(t, ts.URL+"/openrlhf", `{"query": ["a"], "labels": [{"verifier": "selfstop"}]}`)
	o = openRLHFAnswer{}
	decode(t, resp, &o)
	assert.Equal(t, 200, code, "openrlhf, verifier's own timeout %s", resp)
	assert.Equal(t, float64(1), o.ExtraLogs["timeout"][0], "openrlhf, verifier's own timeout %s", resp)
	assert.Equal(t, float64(0), o.ExtraLogs["error"][0], "openrlhf, verifier's own timeout %s", resp)
	for series, want := range map[string]float64{
		`rlpost_serve_item_timeouts_total{endpoint="verify",verifier="selfstop"}`: 1,
		`rlpost_serve_item_timeouts_total{endpoint="verify",verifier="slow"}`:     1,
		`rlpost_serve_item_timeouts_total{endpoint="verify",verifier="stubborn"}`: 1,
		`rlpost_serve_item_timeouts_total{endpoint="openrlhf",verifier="slow"}`:   1,
		`rlpost_serve_item_timeouts_total{endpoint="slime",verifier="slow"}`:      1,
		`rlpost_serve_items_total{endpoint="verify",verifier="slow"}`:             1,
	} {
		if got := metricValue(t, ts.URL, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

// TestWorkersBoundConcurrency: however many requests arrive, no more than
// Config.Workers verifier calls run at once, and every item is answered.
func TestWorkersBoundConcurrency(t *testing.T) {
	var mu sync.Mutex
	running, peak, calls := 0, 0, 0
	release := make(chan struct{})
	reg := new(verifiers.Registry)
	must(t, reg.Register("count", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		mu.Lock()
		running++
		calls++
		peak = max(peak, running)
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		select {
		case <-release:
			return verifiers.Result{Score: 1, Correct: true}, nil
		case <-ctx.Done():
			return verifiers.Result{}, ctx.Err()
		}
	}))))
	cfg := DefaultConfig()
	cfg.Workers = 3
	cfg.Registry = reg
	cfg.Verifier = "count"
	s, err := New(cfg)
	must(t, err)
	defer s.Close()
	ts := newHTTPTest(t, s)
	var wg sync.WaitGroup
	const requests = 8
	codes := make([]int, requests)
	for r := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[r], _ = post(t, ts.URL+"/verify", `{"items": [{"verifier": "count", "pred": "a"}, {"verifier": "count", "pred": "b"}]}`)
		}()
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, 3, running, "verifier calls running with 16 items sent, want 3 (the workers)")
	mu.Unlock()
	close(release)
	wg.Wait()
	for r, c := range codes {
		assert.Equal(t, http.StatusOK, c, "request %d", r)
	}
	assert.Equal(t, 3, peak, "peak of concurrent verifier calls over calls, want 3 over")
	assert.Equal(t, 2*requests, calls, "peak of concurrent verifier calls over calls, want 3 over")
}

func newHTTPTest(t *testing.T, s *Server) *httpTestServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	ts := &httpTestServer{URL: "http://" + ln.Addr().String(), cancel: cancel, done: done}
	t.Cleanup(func() { ts.stop() })
	return ts
}

type httpTestServer struct {
	URL    string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func (ts *httpTestServer) stop() error {
	ts.once.Do(func() {
		ts.cancel()
		ts.err = <-ts.done
	})
	return ts.err
}

// TestGracefulShutdown: once Serve's context ends, the listener closes at
// once, and the request in flight still gets its full answer.
func TestGracefulShutdown(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	cfg := DefaultConfig()
	cfg.Registry = testRegistry(t, started, release)
	s, err := New(cfg)
	must(t, err)
	ts := newHTTPTest(t, s)

	type answer struct {
		code int
		body string
	}
	inFlight := make(chan answer, 1)
	go func() {
		c, b := post(t, ts.URL+"/slime", `{"response": "x", "label": {"verifier": "gate"}}`)
		inFlight <- answer{c, b}
	}()
	<-started // the request is being scored
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	// New connections are refused once the listener is closed.
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.URL, "http://"), 100*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		require.False(t, time.Now().After(deadline), "still accepting connections 2s after shutdown began")
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	a := <-inFlight
	assert.Equal(t, http.StatusOK, a.code, "in-flight request, want 200 and 1")
	assert.Equal(t, "1.0", a.body, "in-flight request, want 200 and 1.0")
	assert.NoError(t, <-stopped, "Serve")
	must(t, s.Close())
	// A closed Server refuses work rather than hanging.
	rec := newRecorder()
	s.ServeHTTP(rec, mustRequest(t, "/slime", `{"response": "x"}`))
	assert.Equal(t, http.StatusServiceUnavailable, rec.code, "after Close, want 503")
}

func TestConfigZeroValueIsAnError(t *testing.T) {
	_, err := New(Config{})
	require.ErrorIs(t, err, ErrConfig, "New(Config)")
	assert.Contains(t, err.Error(), "DefaultConfig", "New(Config)")
	cfg := DefaultConfig()
	cfg.Verifier = "nope"
	_, err = New(cfg)
	assert.ErrorIs(t, err, ErrConfig, "unknown default verifier")
	cfg = DefaultConfig()
	cfg.MaxInflight = cfg.MaxBody - 1
	_, err = New(cfg)
	assert.ErrorIs(t, err, ErrConfig, "MaxInflight < MaxBody")
}
