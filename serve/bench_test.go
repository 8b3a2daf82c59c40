package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlpost/rlpost/verifiers"
)

// BenchmarkVerifyBatch measures the server's own cost around the verifiers:
// one /verify request of 1000 math items of ~1 KB, through ServeHTTP
// without a network. Compare ns/item with the verifier alone
// (BenchmarkVerifyBatch/raw).
func BenchmarkVerifyBatch(b *testing.B) {
	think := "<think>" + strings.Repeat("We set up the equation from the statement, simplify both sides, and check the result. ", 10) + "</think>\n"
	type it struct {
		Verifier string `json:"verifier"`
		Gold     string `json:"gold"`
		Pred     string `json:"pred"`
	}
	items := make([]it, 1000)
	for i := range items {
		items[i] = it{"math", `\frac{14}{3}`, think + `Therefore $\boxed{\frac{14}{3}}$.`}
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	s, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("raw", func(b *testing.B) {
		// The verifier alone on every core, as the server's workers run it.
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := verifiers.Default.Verify(ctx, "math", items[0].Pred, items[0].Gold, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/item")
	})
	b.Run("serve", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			rec := newRecorder()
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/verify", strings.NewReader(string(body)))
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Content-Type", "application/json")
			s.ServeHTTP(rec, req)
			if rec.code != http.StatusOK {
				b.Fatal(rec.code, rec.body.String())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
	})
}

// BenchmarkOverhead is the server's own cost per item: 1000 items of ~1 KB
// on a verifier that does nothing.
func BenchmarkOverhead(b *testing.B) {
	reg := new(verifiers.Registry)
	reg.Register("nop", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		return verifiers.Result{Score: 1, Correct: true}, nil
	})))
	type it struct {
		Verifier string `json:"verifier"`
		Gold     string `json:"gold"`
		Pred     string `json:"pred"`
	}
	think := "<think>" + strings.Repeat("We set up the equation from the statement, simplify both sides, and check the result. ", 10) + "</think>\n"
	items := make([]it, 1000)
	for i := range items {
		items[i] = it{"nop", `\frac{14}{3}`, think + `Therefore $\boxed{\frac{14}{3}}$.`}
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	cfg := DefaultConfig()
	cfg.Registry, cfg.Verifier = reg, "nop"
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		rec := newRecorder()
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/verify", strings.NewReader(string(body)))
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(rec, req)
		if rec.code != http.StatusOK {
			b.Fatal(rec.code, rec.body.String())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
}

// BenchmarkOpenRLHFOverHTTP measures OpenRLHF's per-sample protocol
// (v0.9.1+: one request per sample, each a one-element batch) against the
// same samples sent in batches, over loopback HTTP with keep-alive
// connections from 4 client goroutines; it reports requests/s and
// items/s. The client runs in the same process, on the same cores.
func BenchmarkOpenRLHFOverHTTP(b *testing.B) {
	s, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	think := "<think>" + strings.Repeat("We set up the equation from the statement, simplify both sides, and check the result. ", 10) + "</think>\n"
	for _, batch := range []int{1, 64} {
		q := make([]string, batch)
		p := make([]string, batch)
		l := make([]string, batch)
		for i := range q {
			p[i] = "<|user|>What is 14/3?<|assistant|>"
			q[i] = p[i] + think + `Therefore $\boxed{\frac{14}{3}}$.`
			l[i] = `\frac{14}{3}`
		}
		body, _ := json.Marshal(map[string]any{"query": q, "prompts": p, "labels": l})
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(ts.URL+"/openrlhf", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/sec, "requests/s")
			b.ReportMetric(float64(b.N*batch)/sec, "items/s")
		})
	}
}

// TestPerSampleRequestCostIsBounded: a one-sample /openrlhf request, the
// shape OpenRLHF sends since v0.9.1, costs the server a bounded number of
// allocations: no per-request setup grows with anything but the item.
func TestPerSampleRequestCostIsBounded(t *testing.T) {
	reg := new(verifiers.Registry)
	must(t, reg.Register("nop", verifiers.WithoutParams(verifiers.Func(func(ctx context.Context, pred, ref string) (verifiers.Result, error) {
		return verifiers.Result{Score: 1, Correct: true}, nil
	}))))
	s, _ := newTest(t, func(c *Config) { c.Registry, c.Verifier = reg, "nop" })
	body := `{"query": ["<|user|>2+2?<|assistant|>It is \\boxed{4}."], "prompts": ["<|user|>2+2?<|assistant|>"], "labels": ["4"]}`
	serveOnce := func() {
		rec := newRecorder()
		req := mustRequest(t, "/openrlhf", body)
		req.ContentLength = int64(len(body))
		s.ServeHTTP(rec, req)
		if rec.code != http.StatusOK {
			t.Fatal(rec.code, rec.body.String())
		}
	}
	serveOnce()
	allocs := testing.AllocsPerRun(200, serveOnce)
	t.Logf("%.0f allocations per one-sample /openrlhf request on a verifier that allocates nothing (request construction included)", allocs)
	assert.LessOrEqual(t, allocs, 60.0, "allocations per one-sample request")
}
