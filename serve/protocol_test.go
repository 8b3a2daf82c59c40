package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/verifyline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type verifyAnswer struct {
	Results []struct {
		Score   *float64 `json:"score"`
		Correct *bool    `json:"correct"`
		Timeout bool     `json:"timeout"`
		Reason  string   `json:"reason"`
		Error   string   `json:"error"`
	} `json:"results"`
}

func TestVerifyAnswersEveryItemInOrder(t *testing.T) {
	_, ts := newTest(t, nil)
	body := `{"items": [
		{"verifier": "math", "gold": "1/2", "pred": "so the answer is $\\boxed{0.5}$"},
		{"verifier": "number", "gold": "1024", "pred": "<answer>1,024</answer>"},
		{"verifier": "nope", "pred": "x"},
		{"verifier": "choice", "gold": "B", "pred": "<answer>C</answer>"},
		{"gold": "B", "pred": "B"},
		{"verifier": "choice", "gold": "B", "pred": "B", "extra": 1},
		17,
		null,
		{"verifier": "panic", "pred": "x"},
		{"verifier": "format", "pred": "<think>a</think><answer>b</answer>"}
	]}`
	code, resp := post(t, ts.URL+"/verify", body)
	require.Equal(t, http.StatusOK, code, "status: %s", resp)
	var got verifyAnswer
	decode(t, resp, &got)
	want := []struct {
		score       float64
		err, reason string // substring of the item's error and its reason kind; "" for a result
	}{
		{1, "", ""}, {1, "", ""}, {0, `items[2]: verifiers: unknown verifier "nope"`, ReasonUnknownVerifier}, {0, "", ""},
		{0, `items[4]: request: missing "verifier"`, ReasonBadItem}, {0, `unknown field "extra"`, ReasonBadItem},
		{0, "items[6]: request:", ReasonBadItem}, {0, `items[7]: request: missing "verifier"`, ReasonBadItem},
		{0, "items[8]: verifier panic panicked: boom", ReasonPanic}, {1, "", ""},
	}
	require.Equal(t, len(want), len(got.Results), "results for items: %s", resp)
	for i, w := range want {
		r := got.Results[i]
		if w.err != "" {
			// An item that cannot be scored scores 0.0, with its reason
			// kind and the error.
			if r.Score == nil || *r.Score != 0 || r.Correct == nil || *r.Correct || !strings.Contains(r.Error, w.err) || r.Reason != w.reason {
				t.Errorf("item %d: got %+v, want score 0, reason %q and an error containing %q", i, r, w.reason, w.err)
			}
			continue
		}
		if r.Error != "" || r.Score == nil || *r.Score != w.score || *r.Correct != (w.score == 1) {
			t.Errorf("item %d: got %+v, want score %v", i, r, w.score)
		}
	}
	// The same item through the verify contract's strictness: unknown
	// top-level keys are errors.
	code, resp = post(t, ts.URL+"/verify", `{"items": [], "x": 1}`)
	wantError(t, code, resp, http.StatusBadRequest, `unknown field "x"`)
	code, resp = post(t, ts.URL+"/verify", `{"items": []}`)
	assert.Equal(t, http.StatusOK, code, "empty batch")
	assert.Equal(t, `{"results":[]}`, resp, "empty batch")
}

type openRLHFAnswer struct {
	Rewards   []float64            `json:"rewards"`
	Scores    []float64            `json:"scores"`
	ExtraLogs map[string][]float64 `json:"extra_logs"`
	Reasons   []*string            `json:"reasons"`
}

func TestOpenRLHFStripsPromptsAndReadsLabels(t *testing.T) {
	_, ts := newTest(t, nil)
	// The response, not the prompt, is scored: the prompt holds a boxed
	// wrong answer that must be ignored.
	body := `{
		"query":   ["<|user|>Is it \\boxed{3}?<|assistant|>It is $\\boxed{4}$.", "P2 <answer>B</answer>", "P3 <answer>12</answer>", "P4 \\boxed{5}"],
		"prompts": ["<|user|>Is it \\boxed{3}?<|assistant|>", "P2 ", "P3 ", "P4 "],
		"labels":  ["4", "{\"verifier\": \"choice\", \"gold\": \"B\"}", "{\"verifier\": \"number\", \"gold\": \"12\", \"params\": {\"tol\": 0.1}}", "3"],
		"templates": "ignored: forks add keys"
	}`
	code, resp := post(t, ts.URL+"/openrlhf", body)
	require.Equal(t, http.StatusOK, code, "status: %s", resp)
	var got openRLHFAnswer
	decode(t, resp, &got)
	want := []float64{1, 1, 1, 0}
	assert.Equal(t, fmt.Sprint(want), fmt.Sprint(got.Rewards), "rewards %v scores %v, want %v", got.Rewards, got.Scores, want)
	assert.Equal(t, fmt.Sprint(want), fmt.Sprint(got.Scores), "rewards %v scores %v, want %v", got.Rewards, got.Scores, want)
	for _, k := range openRLHFExtraLogs {
		assert.Equal(t, len(want), len(got.ExtraLogs[k]), "extra_logs[%q] = %v: entries", k, got.ExtraLogs[k])
	}
	assert.Equal(t, fmt.Sprint(want), fmt.Sprint(got.ExtraLogs["correct"]), "extra_logs.correct %v", got.ExtraLogs["correct"])

	// Without prompts the whole query is the response; without labels the
	// gold is "", which math rejects: score 0, flagged as an error.
	code, resp = post(t, ts.URL+"/openrlhf", `{"query": ["\\boxed{1}"]}`)
	decode(t, resp, &got)
	assert.Equal(t, http.StatusOK, code, "no labels %s", resp)
	assert.Equal(t, float64(0), got.Rewards[0], "no labels %s", resp)
	assert.Equal(t, float64(1), got.ExtraLogs["error"][0], "no labels %s", resp)

	// One bad item scores 0.0 with its reason; the others are scored.
	for _, c := range []struct{ label, reason, err string }{
		{`"{\"verifier\": \"nope\"}"`, ReasonUnknownVerifier, `labels[0]: verifiers: unknown verifier "nope"`},
		{`{"verifier": "nope"}`, ReasonUnknownVerifier, `labels[0]: verifiers: unknown verifier "nope"`},
		{`"{\"verifier\": \"math\", \"glod\": \"1\"}"`, ReasonBadLabel, `labels[0]: label object: json: unknown field "glod"`},
		{`true`, ReasonBadLabel, `labels[0]: a boolean`},
		{`{"verifier": "math", "gold": "1", "params": {"max_factorial": 100000}}`, ReasonParamOverCap, `max_factorial`},
	} {
		body := `{"query": ["\\boxed{1}", "P <answer>B</answer>"], "prompts": ["", "P "], "labels": [` + c.label + `, {"verifier": "choice", "gold": "B"}]}`
		code, resp := post(t, ts.URL+"/openrlhf", body)
		require.Equal(t, http.StatusOK, code, "label %s: %s", c.label, resp)
		var got openRLHFAnswer
		decode(t, resp, &got)
		assert.Equal(t, []float64{0, 1}, got.Rewards, "label %s: %s", c.label, resp)
		assert.Equal(t, []float64{1, 0}, got.ExtraLogs["error"], "label %s: %s", c.label, resp)
		require.Len(t, got.Reasons, 2, "label %s: %s", c.label, resp)
		require.NotNil(t, got.Reasons[0], "label %s: %s", c.label, resp)
		assert.True(t, strings.HasPrefix(*got.Reasons[0], c.reason+": "), "label %s: reason %q, want kind %s", c.label, *got.Reasons[0], c.reason)
		assert.Contains(t, *got.Reasons[0], c.err, "label %s", c.label)
		assert.Nil(t, got.Reasons[1], "label %s: %s", c.label, resp)
	}
	for _, c := range []struct{ body, err string }{
		{`{"query": ["abc", "d"], "prompts": ["a"], "labels": ["1", "2"]}`, `1 "prompts" for 2 "query"`},
		{`{"query": ["abc"], "labels": ["1", "2"]}`, `2 "labels" for 1 "query"`},
		{`{"query": "abc"}`, `field "query" is string, want []string`},
		{`{"query": [1]}`, `field "query" is number, want string`},
		{`{"prompts": ["a"]}`, `missing "query"`},
	} {
		code, resp := post(t, ts.URL+"/openrlhf", c.body)
		wantError(t, code, resp, http.StatusBadRequest, c.err)
	}
}

func TestOpenRLHFLabelThatLooksLikeJSONStaysAGold(t *testing.T) {
	s, _ := newTest(t, nil)
	for _, label := range []string{`"{1, 2}"`, `"{\"a\": 1}"`, `"[0, 0, 10, 10]"`} {
		c, err := s.resolveLabel([]byte(label))
		require.NoError(t, err, "label %s: %+v", label, c)
		assert.Equal(t, "math", c.verifier, "label %s: %+v", label, c)
		assert.NotEmpty(t, c.gold, "label %s: %+v", label, c)
	}
	c, err := s.resolveLabel([]byte(`{"gold": 42}`))
	require.NoError(t, err, "object label with a numeric gold: %+v", c)
	assert.Equal(t, "math", c.verifier, "object label with a numeric gold: %+v", c)
	assert.Equal(t, "42", c.gold, "object label with a numeric gold: %+v", c)
	c, err = s.resolveLabel([]byte(`-3.5`))
	require.NoError(t, err, "numeric label: %+v", c)
	assert.Equal(t, "-3.5", c.gold, "numeric label: %+v", c)
}

func TestSlimeNumberAndDetail(t *testing.T) {
	_, ts := newTest(t, nil)
	code, resp := post(t, ts.URL+"/slime", `{"prompt": "What is 1+1?", "response": "It is \\boxed{2}.", "label": "2"}`)
	assert.Equal(t, http.StatusOK, code, "plain, want the bare number 1")
	assert.Equal(t, "1.0", resp, "plain, want the bare float 1.0")
	code, resp = post(t, ts.URL+"/slime", `{"prompt": [{"role": "user", "content": "x"}], "response": "<answer>B</answer>", "label": {"verifier": "choice", "gold": "C"}}`)
	assert.Equal(t, http.StatusOK, code, "chat prompt, object label, want 0")
	assert.Equal(t, "0.0", resp, "chat prompt, object label, want 0.0")
	var d slimeDetail
	code, resp = post(t, ts.URL+"/slime?detail=1", `{"prompt": "p", "response": "It is \\boxed{2}.", "label": 2}`)
	decode(t, resp, &d)
	assert.Equal(t, http.StatusOK, code, "detail %s", resp)
	assert.Equal(t, float64(1), d.Reward, "detail %s", resp)
	assert.True(t, d.Correct, "detail %s", resp)
	assert.False(t, d.Timeout, "detail %s", resp)
	assert.Equal(t, "math", d.Verifier, "detail %s", resp)
	assert.NotEmpty(t, d.Parsed, "detail %s", resp)
	code, resp = post(t, ts.URL+"/slime?detail=1", `{"prompt": "p", "response": "x", "label": {"verifier": "panic"}}`)
	d = slimeDetail{}
	decode(t, resp, &d)
	assert.Equal(t, http.StatusOK, code, "panicking verifier %s", resp)
	assert.Equal(t, float64(0), d.Reward, "panicking verifier %s", resp)
	assert.Contains(t, d.Error, "panicked", "panicking verifier %s", resp)
	assert.Equal(t, ReasonPanic, d.Reason, "panicking verifier %s", resp)
	// A label naming an unknown verifier is an item error, not a 400.
	code, resp = post(t, ts.URL+"/slime?detail=1", `{"response": "x", "label": {"verifier": "nope"}}`)
	d = slimeDetail{}
	decode(t, resp, &d)
	assert.Equal(t, http.StatusOK, code, "unknown verifier %s", resp)
	assert.Equal(t, ReasonUnknownVerifier, d.Reason, "unknown verifier %s", resp)
	assert.Contains(t, d.Error, `unknown verifier "nope"`, "unknown verifier %s", resp)
	code, resp = post(t, ts.URL+"/slime", `{"response": "x", "label": true}`)
	assert.Equal(t, http.StatusOK, code, "boolean label %s", resp)
	assert.Equal(t, "0.0", resp, "boolean label")
	for _, c := range []struct{ url, body, err string }{
		{"/slime", `{"prompt": "p", "label": "2"}`, `missing "response"`},
		{"/slime", `{"prompt": "p", "response": ["x"], "label": "2"}`, `field "response" is array`},
		{"/slime?detail=yes", `{"response": "x"}`, `detail="yes"`},
	} {
		code, resp := post(t, ts.URL+c.url, c.body)
		wantError(t, code, resp, http.StatusBadRequest, c.err)
	}
}

func TestHealthzAndMetrics(t *testing.T) {
	_, ts := newTest(t, nil)
	if code, body := get(t, ts.URL+"/healthz"); code != http.StatusOK || body != `{"status":"ok"}` {
		t.Errorf("healthz: %d %s", code, body)
	}
	post(t, ts.URL+"/verify", `{"items": [{"verifier": "choice", "gold": "A", "pred": "A"}, {"verifier": "nope", "pred": "A"}]}`)
	post(t, ts.URL+"/slime", `{"response": "A", "label": {"verifier": "choice", "gold": "A"}}`)
	for series, want := range map[string]float64{
		`rlpost_serve_items_total{endpoint="verify",verifier="choice"}`:        1,
		`rlpost_serve_items_total{endpoint="verify",verifier="unknown"}`:       1,
		`rlpost_serve_item_errors_total{endpoint="verify",verifier="unknown"}`: 1,
		`rlpost_serve_items_total{endpoint="slime",verifier="choice"}`:         1,
		`rlpost_serve_requests_total{code="200",endpoint="verify"}`:            1,
		`rlpost_serve_items_in_flight`:                                         0,
		`rlpost_serve_workers`:                                                 2,
		`rlpost_serve_item_duration_seconds_count{verifier="choice"}`:          2,
		`rlpost_serve_request_duration_seconds_count{endpoint="slime"}`:        1,
	} {
		if got := metricValue(t, ts.URL, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if code, resp := post(t, ts.URL+"/healthz", ``); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d %s", code, resp)
	}
}

func TestAppendResultIsEncodingJSONs(t *testing.T) {
	for _, r := range []verifyline.Result{
		{}, {Score: 1, Correct: true}, {Score: 0.123456789012345678}, {Score: 1e-7}, {Score: 5e-324},
		{Timeout: true, Reason: "timeout: \"quoted\" <tag> & \u2028"},
	} {
		want, _ := json.Marshal(r)
		var a, b any
		must(t, json.Unmarshal(appendResult(nil, r), &a))
		must(t, json.Unmarshal(want, &b))
		assert.Equal(t, b, a, "%+v: appendResult %s, encoding/json %s", r, appendResult(nil, r), want)
	}
}
