package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openRLHFBody is what OpenRLHF's remote reward client posts
// (--remote_rm_url): the full texts (prompt and response, as the tokenizer
// decoded them), the prompts, and the dataset labels (--label_key). Other
// keys, which forks add, are ignored.
type openRLHFBody struct {
	Query   *[]string          `json:"query"`
	Prompts *[]string          `json:"prompts"`
	Labels  *[]json.RawMessage `json:"labels"`
}

// openRLHFExtraLogs are the extra_logs keys, always all present: OpenRLHF
// concatenates extra_logs across reward servers by the first server's
// keys, so every answer must carry the same ones.
var openRLHFExtraLogs = [...]string{"correct", "timeout", "error"}

// openRLHF answers POST /openrlhf: {"rewards", "scores", "extra_logs"}.
// The response scored is query[i] with prompts[i] removed from its front;
// a prompt that is not a prefix of its query is a 400, as are lists of
// different lengths and labels that name an unknown verifier. An item that
// fails in its verifier (a rejected reference, a panic) scores 0 and is
// flagged in extra_logs["error"]; one that times out scores 0 and is
// flagged in extra_logs["timeout"].
func (s *Server) openRLHF(ctx context.Context, body []byte) ([]byte, *httpError) {
	var req openRLHFBody
	if herr := decodeBody(body, &req, false); herr != nil {
		return nil, herr
	}
	if req.Query == nil {
		return nil, badRequest(`body: missing "query" (a list of strings: prompt and response)`)
	}
	query := *req.Query
	n := len(query)
	if n > s.cfg.MaxItems {
		return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("%d queries; the limit is %d (-max-items)", n, s.cfg.MaxItems)}
	}
	if req.Prompts != nil && len(*req.Prompts) != n {
		return nil, badRequest(`body: %d "prompts" for %d "query" entries`, len(*req.Prompts), n)
	}
	if req.Labels != nil && len(*req.Labels) != n {
		return nil, badRequest(`body: %d "labels" for %d "query" entries`, len(*req.Labels), n)
	}
	b := s.newBatch(ctx, epOpenRLHF, n)
	for i, q := range query {
		it := &b.items[i]
		it.pred = q
		if req.Prompts != nil {
			p := (*req.Prompts)[i]
			if !strings.HasPrefix(q, p) {
				b.abandon()
				return nil, badRequest("prompts[%d] is not a prefix of query[%d] (%s)", i, i, firstDifference(q, p))
			}
			it.pred = q[len(p):]
		}
		var raw json.RawMessage
		if req.Labels != nil {
			raw = (*req.Labels)[i]
		}
		c, err := s.resolveLabel(raw)
		if err != nil {
			b.abandon()
			return nil, badRequest("labels[%d]: %v", i, err)
		}
		it.verifier, it.gold, it.params = c.verifier, c.gold, c.params
	}
	b.run()
	s.count(b)

	out := make([]byte, 0, 64+4*8*n)
	scores := func(out []byte) []byte {
		out = append(out, '[')
		for i := range b.out {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendFloat(out, b.out[i].score())
		}
		return append(out, ']')
	}
	out = append(out, `{"rewards":`...)
	out = scores(out)
	out = append(out, `,"scores":`...)
	out = scores(out)
	out = append(out, `,"extra_logs":{`...)
	for k, key := range openRLHFExtraLogs {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `":[`...)
		for i := range b.out {
			if i > 0 {
				out = append(out, ',')
			}
			o := &b.out[i]
			var flag bool
			switch key {
			case "correct":
				flag = o.correct()
			case "timeout":
				flag = o.timeout
			case "error":
				flag = o.err != nil
			}
			if flag {
				out = append(out, '1')
			} else {
				out = append(out, '0')
			}
		}
		out = append(out, ']')
	}
	out = append(out, "}}"...)
	return out, nil
}

// score is the reward of an outcome: 0 unless scored.
func (o *outcome) score() float64 {
	if o.timeout || o.err != nil {
		return 0
	}
	return o.res.Score
}

func (o *outcome) correct() bool { return !o.timeout && o.err == nil && o.res.Correct }

// abandon releases a batch that will not run.
func (b *batch) abandon() {
	for i := range b.items {
		b.answer(i, outcome{cancelled: true, err: errCancelled})
	}
}

// firstDifference says where a prompt leaves its query, without quoting
// either in full.
func firstDifference(query, prompt string) string {
	if len(prompt) > len(query) {
		return fmt.Sprintf("prompt of %d bytes, query of %d", len(prompt), len(query))
	}
	for i := range len(prompt) {
		if query[i] != prompt[i] {
			return fmt.Sprintf("they differ at byte %d", i)
		}
	}
	return "they differ"
}
