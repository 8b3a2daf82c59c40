package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rlpost/rlpost/internal/tool/verifyline"
)

// verifyBody is POST /verify's body: items in the form of `rlpost verify`'s
// input lines.
type verifyBody struct {
	Items *[]json.RawMessage `json:"items"`
}

// verify answers POST /verify: {"results": [...]}, one entry per item in
// order, each a verify result or {"error": "items[i]: ..."}.
func (s *Server) verify(ctx context.Context, body []byte) ([]byte, *httpError) {
	raw, ok := verifyline.SplitItems(body) // one pass over the common shape
	if !ok {
		var req verifyBody
		if herr := decodeBody(body, &req, true); herr != nil {
			return nil, herr
		}
		if req.Items == nil {
			return nil, badRequest(`body: missing "items" (a list of {"verifier", "gold", "pred", "params"} objects)`)
		}
		raw = *req.Items
	}
	if len(raw) > s.cfg.MaxItems {
		return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("%d items; the limit is %d (-max-items)", len(raw), s.cfg.MaxItems)}
	}
	b := s.newBatch(ctx, epVerify, len(raw))
	for i, r := range raw {
		if len(r) == 0 || string(r) == "null" {
			r = []byte("{}") // parsed by the worker into "missing verifier"
		}
		b.items[i].raw = r
	}
	b.run()
	s.count(b)
	out := make([]byte, 0, 16+48*len(raw))
	out = append(out, `{"results":[`...)
	for i := range b.out {
		if i > 0 {
			out = append(out, ',')
		}
		res, err := b.out[i].wire(s.cfg.Timeout)
		if err != nil {
			out = append(out, `{"error":`...)
			out = appendJSONString(out, fmt.Sprintf("items[%d]: %v", i, err))
			out = append(out, '}')
			continue
		}
		out = appendResult(out, res)
	}
	out = append(out, "]}"...)
	return out, nil
}

// appendResult appends a verify result as encoding/json writes
// verifyline.Result (TestAppendResultIsEncodingJSONs).
func appendResult(out []byte, res verifyline.Result) []byte {
	out = append(out, `{"score":`...)
	out = appendFloat(out, res.Score)
	out = append(out, `,"correct":`...)
	out = strconv.AppendBool(out, res.Correct)
	if res.Timeout {
		out = append(out, `,"timeout":true`...)
	}
	if res.Reason != "" {
		out = append(out, `,"reason":`...)
		out = appendJSONString(out, res.Reason)
	}
	return append(out, '}')
}

// count adds a finished batch to the item metrics.
// The first item error of a request is logged, so that a misconfigured
// dataset (a reference every item rejects) shows in the log and not only
// as rewards of 0.
func (s *Server) count(b *batch) {
	failed, first := 0, -1
	defer func() {
		if failed > 0 {
			s.log("items could not be scored", "endpoint", b.endpoint, "failed", failed, "of", len(b.out),
				"first", fmt.Sprintf("items[%d]: %v", first, b.out[first].err))
		}
	}()
	// Tally per verifier first: one metric update per verifier and kind
	// rather than per item.
	type tally struct{ items, timeouts, errors int }
	var last string
	var cur *tally
	tallies := map[string]*tally{}
	for i := range b.out {
		o := &b.out[i]
		if o.cancelled {
			continue
		}
		if name := b.items[i].verifier; cur == nil || name != last {
			v := s.verifierLabel(name)
			if cur = tallies[v]; cur == nil {
				cur = new(tally)
				tallies[v] = cur
			}
			last = name
		}
		cur.items++
		switch {
		case o.timeout:
			cur.timeouts++
		case o.err != nil:
			cur.errors++
			if failed++; first < 0 {
				first = i
			}
		}
	}
	for v, t := range tallies {
		s.metrics.items.WithLabelValues(b.endpoint, v).Add(float64(t.items))
		if t.timeouts > 0 {
			s.metrics.itemTimeouts.WithLabelValues(b.endpoint, v).Add(float64(t.timeouts))
		}
		if t.errors > 0 {
			s.metrics.itemErrors.WithLabelValues(b.endpoint, v).Add(float64(t.errors))
		}
	}
}

// verifierLabel is name when the registry holds it, else "unknown", so
// that clients cannot mint label values.
func (s *Server) verifierLabel(name string) string {
	if _, err := s.cfg.Registry.Factory(name); err != nil {
		return "unknown"
	}
	return name
}
