package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

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
