package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// httpError is a request the server answers with a 4xx or 5xx status and
// {"error": msg}.
type httpError struct {
	code int
	msg  string
}

func badRequest(format string, a ...any) *httpError {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// bufs recycles request-body buffers. Buffers grown past maxKeptBuf are
// dropped rather than kept, so a burst of large requests does not pin
// their memory.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxKeptBuf = 4 << 20

// readBody reads the whole body within Config.MaxBody, after taking its
// size from the in-flight byte budget. release returns both.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), herr *httpError) {
	if r.ContentLength > s.cfg.MaxBody {
		return nil, nil, &httpError{http.StatusRequestEntityTooLarge,
			fmt.Sprintf("body of %d bytes; the limit is %d (-max-body)", r.ContentLength, s.cfg.MaxBody)}
	}
	charge := s.cfg.MaxBody // unknown length: the most it can be
	if r.ContentLength >= 0 {
		charge = r.ContentLength
	}
	if err := s.budget.acquire(r.Context(), charge); err != nil {
		return nil, nil, &httpError{http.StatusServiceUnavailable, "request cancelled while waiting for room: " + err.Error()}
	}
	// The body must arrive within ReadTimeout; the deadline is lifted
	// afterwards so that scoring a long batch is not cut off.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout)) // unsupported by test recorders: no deadline then
	buf := bufs.Get().(*bytes.Buffer)
	buf.Reset()
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	release = func() {
		if buf.Cap() <= maxKeptBuf {
			bufs.Put(buf)
		}
		s.budget.release(charge)
	}
	if err != nil {
		release()
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, nil, &httpError{http.StatusRequestEntityTooLarge,
				fmt.Sprintf("body over %d bytes (-max-body)", s.cfg.MaxBody)}
		}
		return nil, nil, badRequest("reading the body: %v", err)
	}
	return buf.Bytes(), release, nil
}

// reply writes a JSON body under the write deadline.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, code int, body []byte) int {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return code
}

// fail writes {"error": msg}.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, msg string) int {
	b, _ := json.Marshal(map[string]string{"error": msg})
	if code >= 500 && code != http.StatusServiceUnavailable {
		s.log("request failed", "path", r.URL.Path, "code", code, "error", msg)
	}
	return s.reply(w, r, code, b)
}

// failUnread is fail for a request whose body was not read to its end. It
// closes the connection after the answer: otherwise net/http would first
// read and discard the rest of the body, and a client that stalls in its
// body would hold the handler with no deadline.
func (s *Server) failUnread(w http.ResponseWriter, r *http.Request, code int, msg string) int {
	w.Header().Set("Connection", "close")
	return s.fail(w, r, code, msg)
}

// decodeBody decodes a whole body into v: one JSON value and nothing after
// it. strict rejects unknown fields. The error text names what is wrong
// without quoting the body, which may be large.
func decodeBody(body []byte, v any, strict bool) *httpError {
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return badRequest("body: field %q is %s, want %s", typeErr.Field, typeErr.Value, typeErr.Type)
		}
		if err == io.EOF {
			return badRequest("body: empty; want a JSON object")
		}
		return badRequest("body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("body: data after the JSON object")
	}
	return nil
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// appendFloat appends a score, which the registry keeps finite and in
// [0, 1].
func appendFloat(b []byte, x float64) []byte {
	return strconv.AppendFloat(b, x, 'g', -1, 64)
}
