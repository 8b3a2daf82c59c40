package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
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
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, resp)
	}
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
	if code != 200 || o.Rewards[0] != 0 || o.ExtraLogs["timeout"][0] != 1 || o.ExtraLogs["error"][0] != 0 || o.Rewards[1] != 1 {
		t.Errorf("openrlhf with a timeout: %d %s", code, resp)
	}
	var d slimeDetail
	code, resp = post(t, ts.URL+"/slime?detail=1", `{"response": "x", "label": {"verifier": "slow"}}`)
	decode(t, resp, &d)
	if code != 200 || d.Reward != 0 || !d.Timeout || d.Reason == "" {
		t.Errorf("slime with a timeout: %d %s", code, resp)
	}
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
	if code != 200 || o.ExtraLogs["timeout"][0] != 1 || o.ExtraLogs["error"][0] != 0 {
		t.Errorf("openrlhf, verifier's own timeout: %d %s", code, resp)
	}
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
	if running != 3 {
		t.Errorf("%d verifier calls running with 16 items sent, want 3 (the workers)", running)
	}
	mu.Unlock()
	close(release)
	wg.Wait()
	for r, c := range codes {
		if c != http.StatusOK {
			t.Errorf("request %d: %d", r, c)
		}
	}
	if peak != 3 || calls != 2*requests {
		t.Errorf("peak of %d concurrent verifier calls over %d calls, want 3 over %d", peak, calls, 2*requests)
	}
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
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections 2s after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	a := <-inFlight
	if a.code != http.StatusOK || a.body != "1" {
		t.Errorf("in-flight request: %d %q, want 200 and 1", a.code, a.body)
	}
	assert.NoError(t, <-stopped, "Serve")
	must(t, s.Close())
	// A closed Server refuses work rather than hanging.
	rec := newRecorder()
	s.ServeHTTP(rec, mustRequest(t, "/slime", `{"response": "x"}`))
	if rec.code != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d, want 503", rec.code)
	}
}

func TestConfigZeroValueIsAnError(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "DefaultConfig") {
		t.Errorf("New(Config{}): %v", err)
	}
	cfg := DefaultConfig()
	cfg.Verifier = "nope"
	if _, err := New(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown default verifier: %v", err)
	}
	cfg = DefaultConfig()
	cfg.MaxInflight = cfg.MaxBody - 1
	if _, err := New(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("MaxInflight < MaxBody: %v", err)
	}
}
