package serve

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBearerToken(t *testing.T) {
	_, ts := newTest(t, func(c *Config) { c.Token = testToken })
	body := `{"response": "A", "label": {"verifier": "choice", "gold": "A"}}`
	for _, h := range [][]string{
		nil,
		{"Authorization", "Bearer " + testToken + "x"},
		{"Authorization", "Bearer " + testToken[:len(testToken)-1]},
		{"Authorization", testToken},
		{"Authorization", "Basic " + testToken},
		{"Authorization", "Bearer"},
		{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("rlpost:wrong-token-0123456789"))},
		{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(testToken))},
		{"Authorization", "Basic !!!"},
	} {
		code, resp := post(t, ts.URL+"/slime", body, h...)
		wantError(t, code, resp, http.StatusUnauthorized, "missing or wrong token")
		if code, _ := get(t, ts.URL+"/metrics", h...); code != http.StatusUnauthorized {
			t.Errorf("/metrics with %q: %d, want 401", h, code)
		}
	}
	if code, resp := post(t, ts.URL+"/slime", body, "Authorization", "Bearer "+testToken); code != http.StatusOK || resp != "1.0" {
		t.Errorf("right token: %d %s", code, resp)
	}
	if code, _ := get(t, ts.URL+"/healthz", "Authorization", "bearer "+testToken); code != http.StatusOK {
		t.Errorf("scheme is case-insensitive: got %d", code)
	}
	// The token as a URL's password, which the Python HTTP clients send as
	// Basic auth.
	withCreds := strings.Replace(ts.URL, "http://", "http://rlpost:"+testToken+"@", 1)
	if code, resp := post(t, withCreds+"/slime", body); code != http.StatusOK || resp != "1.0" {
		t.Errorf("token in the URL's credentials: %d %s", code, resp)
	}
}

func TestTokenTooShortIsRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Token = "short"
	_, err := New(cfg)
	assert.ErrorIs(t, err, ErrConfig, "New with a 5-byte token: %v, want ErrConfig", err)
}

func TestCheckBindRefusesPublicAddressWithoutToken(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8700", "127.0.0.2:0", "[::1]:8700", "localhost:8700"} {
		assert.NoError(t, CheckBind(addr, false), "%s", addr)
	}
	for _, addr := range []string{"0.0.0.0:8700", ":8700", "[::]:8700", "10.1.2.3:8700", "example.com:80", "localhost.evil.com:80"} {
		err := CheckBind(addr, false)
		require.Error(t, err, "%s without a token, want a refusal", addr)
		assert.Contains(t, err.Error(), "without a token", "%s without a token, want a refusal", addr)
		assert.NoError(t, CheckBind(addr, true), "%s with a token", addr)
	}
	assert.Error(t, CheckBind("no-port", true), "an address without a port was accepted")
}

func TestHostileBodies(t *testing.T) {
	_, ts := newTest(t, func(c *Config) {
		c.MaxBody = 4096
		c.MaxInflight = 8192
		c.MaxItems = 8
	})
	big := `{"items": [{"verifier": "choice", "gold": "A", "pred": "` + strings.Repeat("A", 5000) + `"}]}`
	nine := `{"items": [` + strings.TrimSuffix(strings.Repeat(`{"verifier": "choice", "pred": "A"},`, 9), ",") + `]}`
	for _, c := range []struct {
		path, body string
		code       int
		err        string
	}{
		{"/verify", ``, 400, "empty"},
		{"/verify", `{"items": [`, 400, "unexpected EOF"},
		{"/verify", `{"items": [}`, 400, "invalid character"},
		{"/verify", `[1, 2]`, 400, "is array, want an object"},
		{"/verify", `{"items": {}}`, 400, `field "items": is object, want an array`},
		{"/verify", `{"items": "x"}`, 400, `field "items": is string, want an array`},
		{"/verify", `{}`, 400, `missing "items"`},
		{"/verify", `{"items": []} {"items": []}`, 400, "data after"},
		{"/verify", "\xff\xfe", 400, "invalid character"},
		{"/verify", strings.Repeat("[", 4000), 413, "nested more than 64 deep"},
		{"/verify", big, 413, "the limit is 4096"},
		{"/verify", nine, 413, "body: items: more than 8 elements in one array (-max-items)"},
		{"/openrlhf", `{"query": ` + strings.Repeat(`["a"],`, 1) + `}`, 400, "invalid character"},
		{"/openrlhf", `{"query": [` + strings.TrimSuffix(strings.Repeat(`"a",`, 9), ",") + `]}`, 413, "body: query: more than 8 elements"},
		{"/slime", `"just a string"`, 400, "body: is string, want an object"},
		{"/slime", `{"response": null}`, 400, `missing "response"`},
		{"/nowhere", `{}`, 404, `no endpoint "/nowhere"`},
	} {
		code, resp := post(t, ts.URL+c.path, c.body)
		if code != c.code {
			t.Errorf("%s %.60q: status %d, want %d (%s)", c.path, c.body, code, c.code, resp)
			continue
		}
		wantError(t, code, resp, c.code, c.err)
	}
	// A body over the limit sent without a Content-Length (chunked) is cut
	// off at the limit, not read to its end.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/verify", io.MultiReader(strings.NewReader(big), strings.NewReader(strings.Repeat(" ", 1<<20))))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "chunked oversized body, want 413")
	// A declared length over the limit is refused before reading.
	code, resp2 := post(t, ts.URL+"/verify", big)
	wantError(t, code, resp2, 413, "body of")
	if code, _ := get(t, ts.URL+"/verify"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /verify: %d, want 405", code)
	}
	// Still serving, nothing left in flight.
	if code, body := post(t, ts.URL+"/slime", `{"response": "A", "label": {"verifier": "choice", "gold": "A"}}`); code != 200 || body != "1.0" {
		t.Errorf("after the hostile bodies: %d %s", code, body)
	}
	if v := metricValue(t, ts.URL, "rlpost_serve_items_in_flight"); v != 0 {
		t.Errorf("items in flight after all answers: %v", v)
	}
}

// TestSlowHeadersAreCutOff: a client that never finishes its headers is
// disconnected after ReadHeaderTimeout.
func TestSlowHeadersAreCutOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Registry = testRegistry(t, nil, nil)
	cfg.ReadHeaderTimeout = 100 * time.Millisecond
	s, err := New(cfg)
	must(t, err)
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	must(t, err)
	defer conn.Close()
	fmt.Fprint(conn, "POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n") // and nothing more
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = bufio.NewReader(conn).ReadString('\n')
	require.Error(t, err, "connection with unfinished headers: err after, want closed after ~100ms")
	assert.LessOrEqual(t, time.Since(start), 3*time.Second, "connection with unfinished headers: err after, want closed after ~100ms")
}

// TestSlowBodyIsCutOff: a client that sends its headers and then stalls in
// the body is answered and disconnected after ReadTimeout, and its budget
// returned.
func TestSlowBodyIsCutOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Registry = testRegistry(t, nil, nil)
	cfg.ReadTimeout = 100 * time.Millisecond
	s, err := New(cfg)
	must(t, err)
	defer s.Close()
	ts := newHTTPTest(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	must(t, err)
	defer conn.Close()
	fmt.Fprint(conn, "POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"items\": [") // and nothing more
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	status, err := bufio.NewReader(conn).ReadString('\n')
	assert.LessOrEqual(t, time.Since(start), 3*time.Second, "stalled body held the connection for")
	if err == nil && !strings.Contains(status, "408") {
		t.Errorf("stalled body answered %q, want a 408 or a closed connection", status)
	}
	assert.Equal(t, cfg.MaxInflight, s.budget.free, "budget after the request, want all back")
}

// TestRefusedRequestDoesNotWaitForItsBody: a request refused before its
// body is read (here 401) is answered at once and its connection closed,
// rather than the server draining a body the client never sends.
func TestRefusedRequestDoesNotWaitForItsBody(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Registry = testRegistry(t, nil, nil)
	cfg.Token = testToken
	s, err := New(cfg)
	must(t, err)
	defer s.Close()
	ts := newHTTPTest(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	must(t, err)
	defer conn.Close()
	fmt.Fprint(conn, "POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{") // no token, body stalls
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err, "after; want a prompt 401")
	assert.Contains(t, status, "401", "after; want a prompt 401")
	assert.LessOrEqual(t, time.Since(start), 2*time.Second, "after; want a prompt 401")
}
