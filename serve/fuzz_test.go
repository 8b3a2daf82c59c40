package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzEndpoints: whatever the body, every scoring endpoint answers 200 with
// valid JSON of its shape, or a 4xx with {"error"}, and leaves nothing in
// flight.
func FuzzEndpoints(f *testing.F) {
	for _, s := range []string{
		`{"items": [{"verifier": "math", "gold": "1/2", "pred": "\\boxed{0.5}"}, 3, null, {"verifier": "choice"}]}`,
		`{"query": ["ab"], "prompts": ["a"], "labels": ["{\"verifier\": \"number\", \"gold\": \"1\"}"]}`,
		`{"prompt": [], "response": "\\boxed{2}", "label": {"verifier": "choice", "gold": "B", "params": {"extract": "none"}}}`,
		`{"items": [{"verifier": "number", "pred": "1", "params": {"tol": "x"}}]}`,
		`{"query": ["\u00e9\ud83d\ude00"], "labels": [1e400]}`,
		`{"items": [{"verifier": "math", "pred": "\ud800"}]}`,
	} {
		for ep := range 3 {
			f.Add(uint8(ep), []byte(s))
		}
	}
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.MaxBody = 1 << 16
	cfg.MaxInflight = 1 << 18
	cfg.MaxItems = 64
	cfg.Timeout = 200 * time.Millisecond
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	paths := []string{"/verify", "/openrlhf", "/slime?detail=1"}
	f.Fuzz(func(t *testing.T, ep uint8, body []byte) {
		path := paths[int(ep)%len(paths)]
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1"+path, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
		rec := newRecorder()
		s.ServeHTTP(rec, req)
		out := rec.body.String()
		if !json.Valid([]byte(out)) {
			t.Fatalf("%s %q: answer is not JSON: %q", path, body, out)
		}
		switch {
		case rec.code == http.StatusOK:
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s %q: 200 with %q", path, body, out)
			}
			if n := nonFloat(out); n != "" {
				t.Fatalf("%s %q: 200 with the integer %s in %q", path, body, n, out)
			}
		case rec.code >= 400 && rec.code < 500:
			var e struct{ Error string }
			if json.Unmarshal([]byte(out), &e) != nil || e.Error == "" {
				t.Fatalf("%s: %d without an error text: %q", path, rec.code, out)
			}
		default:
			t.Fatalf("%s %q: status %d %q", path, body, rec.code, out)
		}
	})
}
