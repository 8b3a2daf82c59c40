package serve

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// recorder is a minimal http.ResponseWriter for calling ServeHTTP directly.
type recorder struct {
	h    http.Header
	code int
	body strings.Builder
}

func newRecorder() *recorder                    { return &recorder{h: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

func mustRequest(t *testing.T, path, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1"+path, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// SetReadDeadline and SetWriteDeadline let http.ResponseController's
// deadlines succeed, as on a real connection.
func (r *recorder) SetReadDeadline(time.Time) error  { return nil }
func (r *recorder) SetWriteDeadline(time.Time) error { return nil }
