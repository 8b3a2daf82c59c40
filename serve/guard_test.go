package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// send posts (or gets, with an empty body) with raw headers, Host
// included, and returns the status.
func send(t *testing.T, url, method, body string, header map[string]string) (int, string) {
	t.Helper()
	var req *http.Request
	var err error
	if method == http.MethodGet {
		req, err = http.NewRequest(method, url, nil)
	} else {
		req, err = http.NewRequest(method, url, strings.NewReader(body))
	}
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

var scoring = []struct{ path, body string }{
	{"/verify", `{"items": [{"verifier": "choice", "gold": "A", "pred": "A"}]}`},
	{"/openrlhf", `{"query": ["A"], "labels": [{"verifier": "choice", "gold": "A"}]}`},
	{"/slime", `{"response": "A", "label": {"verifier": "choice", "gold": "A"}}`},
}

// TestScoringNeedsJSON: a POST a web page can send without a preflight
// (text/plain, a form, no type at all) is refused with 415 on every
// scoring endpoint; application/json with parameters is accepted.
func TestScoringNeedsJSON(t *testing.T) {
	_, ts := newTest(t, nil)
	for _, ep := range scoring {
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx", "json"} {
			code, resp := send(t, ts.URL+ep.path, http.MethodPost, ep.body, map[string]string{"Content-Type": ct})
			wantError(t, code, resp, http.StatusUnsupportedMediaType, "send application/json")
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
			code, resp := send(t, ts.URL+ep.path, http.MethodPost, ep.body, map[string]string{"Content-Type": ct})
			assert.Equal(t, http.StatusOK, code, "%s %s: %s", ep.path, ct, resp)
		}
	}
	assert.Equal(t, 21.0, metricValue(t, ts.URL, `rlpost_serve_refusals_total{reason="content_type"}`))
}

// TestHostMustNameThisServer: a Host a DNS-rebinding page would send (its
// own name, any port) is refused on every endpoint, /healthz and /metrics
// included, with or without a token; loopback names and addresses, the
// listen address and allow-listed names pass.
func TestHostMustNameThisServer(t *testing.T) {
	for _, token := range []string{"", testToken} {
		_, ts := newTest(t, func(c *Config) {
			c.Token = token
			c.AllowedHosts = []string{"rlpost.internal", "Reward.Example.COM."}
		})
		auth := map[string]string{"Content-Type": "application/json"}
		if token != "" {
			auth["Authorization"] = "Bearer " + token
		}
		with := func(host string) map[string]string {
			h := map[string]string{"Host": host}
			for k, v := range auth {
				h[k] = v
			}
			return h
		}
		port := ts.URL[strings.LastIndex(ts.URL, ":"):]
		for _, host := range []string{"evil.example" + port, "evil.example", "127.0.0.1.evil.example" + port, "localhost.evil.example", "rlpost.internal.evil.example", "0.0.0.0" + port, "10.0.0.1" + port, "[::2]" + port} {
			for _, ep := range scoring {
				code, resp := send(t, ts.URL+ep.path, http.MethodPost, ep.body, with(host))
				wantError(t, code, resp, http.StatusForbidden, "is not this server's")
			}
			for _, path := range []string{"/healthz", "/metrics"} {
				code, _ := send(t, ts.URL+path, http.MethodGet, "", with(host))
				assert.Equal(t, http.StatusForbidden, code, "GET %s with Host %q", path, host)
			}
		}
		for _, host := range []string{"127.0.0.1" + port, "127.0.0.1", "localhost" + port, "LOCALHOST", "[::1]" + port, "127.1.2.3:80", "rlpost.internal:8700", "reward.example.com", "app.localhost" + port} {
			for _, ep := range scoring {
				code, resp := send(t, ts.URL+ep.path, http.MethodPost, ep.body, with(host))
				assert.Equal(t, http.StatusOK, code, "Host %q %s: %s", host, ep.path, resp)
			}
			code, _ := send(t, ts.URL+"/healthz", http.MethodGet, "", with(host))
			assert.Equal(t, http.StatusOK, code, "GET /healthz with Host %q", host)
		}
	}
	// "*" allows any Host (behind a load balancer that forwards clients'
	// names).
	_, ts := newTest(t, func(c *Config) { c.AllowedHosts = []string{"*"} })
	code, resp := send(t, ts.URL+"/slime", http.MethodPost, scoring[2].body, map[string]string{"Host": "anything.example", "Content-Type": "application/json"})
	assert.Equal(t, http.StatusOK, code, resp)
}

// TestCrossOriginIsRefused: a request a browser marks as coming from
// another origin is refused whether or not a token is set; the same
// origin and requests without the headers (every trainer's client) pass.
func TestCrossOriginIsRefused(t *testing.T) {
	for _, token := range []string{"", testToken} {
		_, ts := newTest(t, func(c *Config) { c.Token = token })
		host := strings.TrimPrefix(ts.URL, "http://")
		base := map[string]string{"Content-Type": "application/json"}
		if token != "" {
			base["Authorization"] = "Bearer " + token
		}
		for _, h := range []map[string]string{
			{"Origin": "http://evil.example"},
			{"Origin": "http://evil.example:" + host[strings.LastIndex(host, ":")+1:]},
			{"Origin": "null"},
			{"Origin": "http://127.0.0.1:1"},
			{"Origin": "file://"},
			{"Sec-Fetch-Site": "cross-site"},
			{"Sec-Fetch-Site": "same-site"},
		} {
			for k, v := range base {
				h[k] = v
			}
			for _, ep := range scoring {
				code, resp := send(t, ts.URL+ep.path, http.MethodPost, ep.body, h)
				wantError(t, code, resp, http.StatusForbidden, "cross-origin")
			}
			code, _ := send(t, ts.URL+"/metrics", http.MethodGet, "", h)
			assert.Equal(t, http.StatusForbidden, code, "GET /metrics with %v", h)
		}
		for _, h := range []map[string]string{{}, {"Origin": "http://" + host}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}} {
			for k, v := range base {
				h[k] = v
			}
			code, resp := send(t, ts.URL+"/slime", http.MethodPost, scoring[2].body, h)
			assert.Equal(t, http.StatusOK, code, "%v: %s", h, resp)
		}
	}
}
