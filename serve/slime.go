package serve

import (
	"context"
	"encoding/json"
)

// slimeBody is what slime's remote reward call posts (--rm-type remote_rm
// --rm-url URL): one sample. The prompt is not needed to score and may be
// any JSON (a string, or a list of chat messages); other keys are ignored.
type slimeBody struct {
	Prompt   json.RawMessage `json:"prompt"`
	Response *string         `json:"response"`
	Label    json.RawMessage `json:"label"`
}

// slimeDetail is the ?detail=1 answer; slime reads the reward from it with
// --reward-key reward.
type slimeDetail struct {
	Reward   float64 `json:"reward"`
	Correct  bool    `json:"correct"`
	Timeout  bool    `json:"timeout"`
	Verifier string  `json:"verifier"`
	Parsed   string  `json:"parsed,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// slime answers POST /slime: the reward as a bare JSON number, or with
// detail "1" or "true" a slimeDetail object. As for /openrlhf, a verifier
// failure or a timeout scores 0 (shown in the detail), and a malformed body
// or a label naming an unknown verifier is a 400.
func (s *Server) slime(ctx context.Context, body []byte, detail string) ([]byte, *httpError) {
	var withDetail bool
	switch detail {
	case "", "0", "false":
	case "1", "true":
		withDetail = true
	default:
		return nil, badRequest("detail=%q; want 1 or 0", detail)
	}
	var req slimeBody
	if herr := decodeBody(body, &req, false); herr != nil {
		return nil, herr
	}
	if req.Response == nil {
		return nil, badRequest(`body: missing "response" (the model's output, a string)`)
	}
	c, err := s.resolveLabel(req.Label)
	if err != nil {
		return nil, badRequest("label: %v", err)
	}
	b := s.newBatch(ctx, epSlime, 1)
	b.items[0] = item{verifier: c.verifier, pred: *req.Response, gold: c.gold, params: c.params}
	b.run()
	s.count(b)
	o := &b.out[0]
	if !withDetail {
		return appendFloat(nil, o.score()), nil
	}
	d := slimeDetail{Reward: o.score(), Correct: o.correct(), Timeout: o.timeout, Verifier: c.verifier}
	switch {
	case o.timeout:
		d.Reason = o.timeoutReason(s.cfg.Timeout)
	case o.err != nil:
		d.Error = o.err.Error()
	default:
		d.Parsed, d.Reason = o.res.Parsed, o.res.Reason
	}
	out, err := json.Marshal(d)
	if err != nil { // only a non-finite score could do this, and the registry rejects those
		return nil, badRequest("encoding the answer: %v", err)
	}
	return out, nil
}
