package serve

// The reliability suite: the attacks of issue 33 repeated on loopback,
// bounded in time and memory. The short form runs in `go test`; the long
// form, with the full default sizes (32 MiB bodies, -max-inflight 128 MiB),
// runs with RLPOST_RELIABILITY=long (docs/serve-security.md).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func longReliability() bool { return os.Getenv("RLPOST_RELIABILITY") == "long" }

// patternBody is a body of exactly size bytes, prefix + unit… + suffix,
// made as it is read, so that the client holds none of it.
type patternBody struct {
	prefix, unit, suffix string
	size, off            int
}

func (p *patternBody) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && p.off < p.size {
		var c byte
		switch {
		case p.off < len(p.prefix):
			c = p.prefix[p.off]
		case p.off >= p.size-len(p.suffix):
			c = p.suffix[p.off-(p.size-len(p.suffix))]
		default:
			c = p.unit[(p.off-len(p.prefix))%len(p.unit)]
		}
		b[n] = c
		n++
		p.off++
	}
	return n, nil
}

// heapPeak samples HeapInuse and Sys until stop is closed and returns their
// peaks.
func heapPeak(stop <-chan struct{}) (heap, sys uint64) {
	var ms runtime.MemStats
	for {
		runtime.ReadMemStats(&ms)
		heap, sys = max(heap, ms.HeapInuse), max(sys, ms.Sys)
		select {
		case <-stop:
			return heap, sys
		case <-time.After(time.Millisecond):
		}
	}
}

// TestAmplifiedBodiesStayUnderTwiceTheBudget: four concurrent bodies of
// -max-body bytes made of `0,` items, then of empty OpenRLHF query
// strings, are refused (413, before decoding) with the server's heap
// growing by at most 2·MaxInflight. Before the shape check, one such 32 MiB
// body took 1.2–1.6 GiB.
func TestAmplifiedBodiesStayUnderTwiceTheBudget(t *testing.T) {
	maxBody := int64(4 << 20)
	if longReliability() {
		maxBody = 32 << 20
	}
	s, ts := newTest(t, func(c *Config) {
		c.MaxBody, c.MaxInflight = maxBody, 4*maxBody
	})
	for _, shape := range []struct{ path, prefix, unit, suffix string }{
		{"/verify", `{"items":[`, `0,`, `0]}`},
		{"/openrlhf", `{"query":[`, `"",`, `""]}`},
	} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, baseSys := ms.HeapInuse, ms.Sys
		stop := make(chan struct{})
		peak := make(chan [2]uint64)
		go func() { h, s := heapPeak(stop); peak <- [2]uint64{h, s} }()
		var wg sync.WaitGroup
		codes := make([]int, 4)
		bodies := make([]string, 4)
		for k := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequest(http.MethodPost, ts.URL+shape.path, &patternBody{prefix: shape.prefix, unit: shape.unit, suffix: shape.suffix, size: int(maxBody)})
				if !assert.NoError(t, err) {
					return
				}
				req.ContentLength = maxBody
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				codes[k], bodies[k] = resp.StatusCode, string(b)
			}()
		}
		wg.Wait()
		close(stop)
		p := <-peak
		grew, sysGrew := int64(p[0])-int64(base), int64(p[1])-int64(baseSys)
		t.Logf("%s: 4 × %d MiB bodies: heap grew %.1f MiB, Sys %.1f MiB (2·MaxInflight = %d MiB)",
			shape.path, maxBody>>20, float64(grew)/(1<<20), float64(sysGrew)/(1<<20), 2*s.cfg.MaxInflight>>20)
		for k := range 4 {
			assert.Equal(t, http.StatusRequestEntityTooLarge, codes[k], "%s: %s", shape.path, bodies[k])
			assert.Contains(t, bodies[k], "more than 65536 elements in one array", shape.path)
		}
		assert.LessOrEqual(t, grew, 2*s.cfg.MaxInflight, "%s: heap growth", shape.path)
	}
	assert.Equal(t, s.cfg.MaxInflight, s.budget.free, "budget after the requests")
}

// slowClient connects, announces a body of n bytes, sends its first bytes
// and then one byte every interval until stop; it returns the status line
// it was answered with ("" if none).
func slowClient(t *testing.T, addr, path string, n int64, interval time.Duration, stop <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"response\": \"", path, n)
	go func() {
		defer conn.Close()
		status := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			status <- line
		}()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case line := <-status:
				out <- line
				return
			case <-stop:
				out <- ""
				return
			case <-tick.C:
				conn.Write([]byte("a"))
			}
		}
	}()
	return out
}

// TestSlowBodiesNeitherStarveOthersNorStay: four clients that announce
// -max-body bodies and send a byte every 100 ms hold 64 KiB of the budget
// each, not their announced size, so a legitimate /slime request is
// answered at once (it waited 20 s and failed before); after -body-grace
// they are cut with 408, counted, and their budget returned.
func TestSlowBodiesNeitherStarveOthersNorStay(t *testing.T) {
	s, ts := newTest(t, nil) // the default limits: 32 MiB bodies, 10 s grace
	addr := strings.TrimPrefix(ts.URL, "http://")
	stop := make(chan struct{})
	var slow []<-chan string
	for range 4 {
		slow = append(slow, slowClient(t, addr, "/slime", s.cfg.MaxBody, 100*time.Millisecond, stop))
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	code, resp := post(t, ts.URL+"/slime", `{"response": "A", "label": {"verifier": "choice", "gold": "A"}}`)
	took := time.Since(start)
	assert.Equal(t, http.StatusOK, code, resp)
	assert.Less(t, took, time.Second, "a legitimate request with four slow bodies connected")
	t.Logf("legitimate /slime answered in %v with four slow bodies connected", took.Round(time.Microsecond))
	s.budget.mu.Lock()
	held := s.cfg.MaxInflight - s.budget.free
	s.budget.mu.Unlock()
	assert.LessOrEqual(t, held, int64(4*firstCharge), "budget held by four slow bodies")
	close(stop)
	for _, c := range slow {
		<-c
	}

	// With a short grace they are cut, counted and their budget returned.
	s2, ts2 := newTest(t, func(c *Config) { c.BodyGrace = 300 * time.Millisecond })
	addr2 := strings.TrimPrefix(ts2.URL, "http://")
	never := make(chan struct{})
	defer close(never)
	slow = slow[:0]
	start = time.Now()
	for range 4 {
		slow = append(slow, slowClient(t, addr2, "/slime", s2.cfg.MaxBody, 100*time.Millisecond, never))
	}
	for _, c := range slow {
		select {
		case line := <-c:
			assert.Contains(t, line, "408", "a slow body's answer")
		case <-time.After(5 * time.Second):
			t.Fatal("a slow body was not cut within 5 s (grace 300 ms)")
		}
	}
	t.Logf("four slow bodies cut after %v (grace 300 ms, minimum rate %d bytes/s)", time.Since(start).Round(time.Millisecond), s2.cfg.MinBodyRate)
	assert.Equal(t, 4.0, metricValue(t, ts2.URL, `rlpost_serve_refusals_total{reason="slow_body"}`))
	assert.Eventually(t, func() bool {
		s2.budget.mu.Lock()
		defer s2.budget.mu.Unlock()
		return s2.budget.free == s2.cfg.MaxInflight
	}, time.Second, 10*time.Millisecond, "budget returned after the slow bodies were cut")
}

// TestFastBodyAtTheMinimumRateIsNotCut: a body that keeps up with
// -min-body-rate is read to its end however long it takes.
func TestFastBodyAtTheMinimumRateIsNotCut(t *testing.T) {
	_, ts := newTest(t, func(c *Config) {
		c.BodyGrace, c.MinBodyRate = 200*time.Millisecond, 2000
	})
	body := `{"response": "A", "label": {"verifier": "choice", "gold": "A"}, "pad": "` + strings.Repeat("x", 1200) + `"}`
	pr, pw := io.Pipe()
	go func() {
		// 4 000 bytes/s, twice the minimum, for about 0.3 s.
		for i := 0; i < len(body); i += 40 {
			pw.Write([]byte(body[i:min(i+40, len(body))]))
			time.Sleep(10 * time.Millisecond)
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/slime", pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "1.0", string(b))
}

// TestSlowReaderIsCutAtTheWriteTimeout: a client that sends a request with
// a large answer and never reads it holds nothing past WriteTimeout.
func TestSlowReaderIsCutAtTheWriteTimeout(t *testing.T) {
	_, ts := newTest(t, func(c *Config) { c.WriteTimeout = 300 * time.Millisecond })
	// Few items with long error texts (the unknown name is quoted in each),
	// so that the answer is large but cheap to compute.
	long := strings.Repeat("n", 2000)
	items := strings.TrimSuffix(strings.Repeat(`{"verifier":"`+long+`","pred":""},`, 3500), ",")
	body := `{"items":[` + items + `]}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The answer is about 7.5 MiB, more than the socket buffers hold; nothing reads it. Only the /metrics
	// request itself may be in flight once the write deadline has passed.
	assert.Eventually(t, func() bool {
		return metricValue(t, ts.URL, "rlpost_serve_requests_in_flight") == 1
	}, 30*time.Second, 50*time.Millisecond, "the unread answer still holds its handler")
	assert.Equal(t, 0.0, metricValue(t, ts.URL, "rlpost_serve_items_in_flight"))
	code, resp := post(t, ts.URL+"/slime", `{"response": "A", "label": {"verifier": "choice", "gold": "A"}}`)
	assert.Equal(t, http.StatusOK, code, resp)
}

// TestClientCannotRaiseLimitsAboveTheCaps: params that raise a mathverify
// limit above the operator's cap are refused per item, fast; the same
// expressions under the default limits are answered fast and bounded.
func TestClientCannotRaiseLimitsAboveTheCaps(t *testing.T) {
	_, ts := newTest(t, nil)
	type item struct{ gold, pred, params string }
	raised := []item{
		{`\binom{100000}{50000}`, `\boxed{\binom{100000}{50000}}`, `{"max_factorial": 100000}`},
		{`100000!`, `\boxed{100000!}`, `{"max_factorial": 100000}`},
		{`2^{1000000}`, `\boxed{2^{1000000}}`, `{"max_exponent": 1048576}`},
		{`1`, `\boxed{1}`, `{"max_depth": 1000}`},
		{`1`, `\boxed{1}`, `{"max_input_len": 1073741824}`},
		{`1`, `\boxed{1}`, `{"timeout_ms": 0}`},
		{`1`, `\boxed{1}`, `{"timeout_ms": 60000}`},
	}
	bounded := []item{
		{`\binom{100000}{50000}`, `\boxed{\binom{100000}{50000}}`, `null`},
		{`100000!`, `\boxed{100000!}`, `null`},
		{`1`, `\boxed{1}`, `{"max_factorial": 10, "timeout_ms": 5}`}, // lowering is allowed
	}
	var parts []string
	for _, it := range append(raised, bounded...) {
		parts = append(parts, fmt.Sprintf(`{"verifier": "math", "gold": %q, "pred": %q, "params": %s}`, it.gold, it.pred, it.params))
	}
	start := time.Now()
	code, resp := post(t, ts.URL+"/verify", `{"items": [`+strings.Join(parts, ",")+`]}`)
	took := time.Since(start)
	require.Equal(t, http.StatusOK, code, resp)
	var got verifyAnswer
	decode(t, resp, &got)
	require.Len(t, got.Results, len(raised)+len(bounded))
	for i := range raised {
		r := got.Results[i]
		assert.Equal(t, ReasonParamOverCap, r.Reason, "item %d (%s): %+v", i, raised[i].params, r)
		assert.Contains(t, r.Error, "above the operator's cap", "item %d", i)
		assert.Equal(t, 0.0, *r.Score, "item %d", i)
	}
	for i := range bounded {
		r := got.Results[len(raised)+i]
		assert.Empty(t, r.Error, "item %d (%s) under the caps: %+v", i, bounded[i].params, r)
	}
	t.Logf("%d items, %d over the caps, answered in %v", len(got.Results), len(raised), took)
	assert.Less(t, took, 2*time.Second, "binom(100000, 50000) and 100000! took 437 ms and 81 ms per item with raised limits")
}

// TestCapsRefuseExactlyAboveTheCap: for every capped key and values drawn
// around its cap, an item is refused exactly when it asks for more than
// the cap.
func TestCapsRefuseExactlyAboveTheCap(t *testing.T) {
	c := DefaultCaps()
	c.MaxFactorial = 77 // an operator's own cap
	caps := map[string]int{"max_factorial": c.MaxFactorial, "max_exponent": c.MaxExponent, "max_depth": c.MaxDepth,
		"max_input_len": c.MaxInputLen, "timeout_ms": int(c.MaxVerifyTimeout / time.Millisecond)}
	var n atomic.Int64
	for key, limit := range caps {
		for _, v := range []int{1, limit / 2, limit - 1, limit, limit + 1, 2 * limit, 1 << 30} {
			if v < 1 {
				continue
			}
			err := c.check(map[string]any{key: float64(v), "precision": 6.0})
			if v > limit {
				require.Error(t, err, "%s = %d over the cap %d", key, v, limit)
				assert.Equal(t, ReasonParamOverCap, reasonOf(err), "%s = %d", key, v)
			} else {
				assert.NoError(t, err, "%s = %d under the cap %d", key, v, limit)
			}
			n.Add(1)
		}
	}
	assert.Error(t, c.check(map[string]any{"timeout_ms": 0.0}), "timeout_ms 0 means no limit: above any cap")
	assert.NoError(t, c.check(map[string]any{"max_factorial": "lots"}), "a wrong type is the verifier's to report")
}

// TestShutdownMidBatchAnswersTheBatch: Serve's context ending (SIGTERM in
// `rlpost serve`) while a batch is being scored lets the batch finish and
// be answered in full, then returns. cmd/rlpost's TestServeSIGTERM sends
// the real signal.
func TestShutdownMidBatchAnswersTheBatch(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.Registry = testRegistry(t, started, release)
	s, err := New(cfg)
	require.NoError(t, err)
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	type answer struct {
		code int
		body string
	}
	done := make(chan answer, 1)
	go func() {
		items := `{"verifier": "gate", "pred": "x"}` + strings.Repeat(`, {"verifier": "choice", "gold": "A", "pred": "A"}`, 99)
		code, body := post(t, url+"/verify", `{"items": [`+items+`]}`)
		done <- answer{code, body}
	}()
	<-started // the batch is being scored
	cancel()  // SIGTERM
	time.Sleep(50 * time.Millisecond)
	close(release)
	a := <-done
	require.Equal(t, http.StatusOK, a.code, a.body)
	var got verifyAnswer
	decode(t, a.body, &got)
	assert.Len(t, got.Results, 100, "every item of the batch answered")
	assert.NoError(t, <-stopped, "Serve after a graceful shutdown")
}

// TestRestOfABodyWaitsBoundedForRoom: a body whose first 64 KiB were
// charged waits for the rest of its charge no longer than its rate deadline
// allows, then is answered 503 busy with its charge returned, so requests
// holding part of the budget cannot wait on each other forever; once there
// is room the same request passes.
func TestRestOfABodyWaitsBoundedForRoom(t *testing.T) {
	const size = 256 << 10
	s, ts := newTest(t, func(c *Config) {
		c.MaxBody, c.MaxInflight = size, size
		c.BodyGrace, c.MinBodyRate = 200*time.Millisecond, 1<<20
	})
	body := `{"response": "A", "label": {"verifier": "choice", "gold": "A"}, "pad": "`
	body += strings.Repeat("x", size-len(body)-2) + `"}`
	require.Len(t, body, size)
	must(t, s.budget.acquire(context.Background(), "someone else", size-firstCharge))
	start := time.Now()
	code, resp := post(t, ts.URL+"/slime", body)
	wantError(t, code, resp, http.StatusServiceUnavailable, "no room in the in-flight budget")
	assert.Less(t, time.Since(start), 3*time.Second, "the wait for room is bounded")
	assert.Equal(t, 1.0, metricValue(t, ts.URL, `rlpost_serve_refusals_total{reason="busy"}`))
	s.budget.release("someone else", size-firstCharge)
	code, resp = post(t, ts.URL+"/slime", body)
	assert.Equal(t, http.StatusOK, code, resp)
	assert.Equal(t, "1.0", resp)
	assert.Equal(t, int64(size), s.budget.free, "budget after the requests")
}
