package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/rlpost/rlpost/internal/verifyline"
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

// appendResult appends a verify result as encoding/json writes it.
func appendResult(out []byte, res verifyline.Result) []byte {
	b, _ := json.Marshal(res) // finite scores only: the registry rejects NaN
	return append(out, b...)
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
	for i := range b.out {
		o := &b.out[i]
		if o.cancelled {
			continue
		}
		v := s.verifierLabel(b.items[i].verifier)
		s.metrics.items.WithLabelValues(b.endpoint, v).Inc()
		switch {
		case o.timeout:
			s.metrics.itemTimeouts.WithLabelValues(b.endpoint, v).Inc()
		case o.err != nil:
			s.metrics.itemErrors.WithLabelValues(b.endpoint, v).Inc()
			if failed++; first < 0 {
				first = i
			}
		}
	}
}

// verifierLabel is name when the registry holds it, else "unknown", so
// that clients cannot mint label values.
func (s *Server) verifierLabel(name string) string {
	if _, err := s.cfg.Registry.Lookup(name); err != nil {
		return "unknown"
	}
	return name
}
