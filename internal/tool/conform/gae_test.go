package conform

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/golden"
)

// runJSON runs a request and returns the response as generic JSON.
func runJSON(t *testing.T, req string) (map[string]any, error) {
	t.Helper()
	resp, err := Run([]byte(req))
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(resp)
	if err != nil {
		t.Fatalf("response does not encode: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func TestGAERequests(t *testing.T) {
	// docs/spec.md#gae's golden row through the JSON contract, with the documented
	// defaults (γ = λ = 1, γ_turn = 0.95) left out of the request.
	const row = `"rewards": [[0, -0.01, 0, 0.5, 0, 0, 0, 1]], "values": [[0.1, 0.2, 0.3, 0.4, 0, 0, 0.6, 0.7]], "mask": [[0, 1, 1, 1, 0, 0, 1, 1]]`
	for _, c := range []struct {
		name, req string
		adv       []float64
	}{
		{"bilevel_gae defaults", `{"op": "bilevel_gae", ` + row + `, "turn_end": [[0, 0, 0, 1, 0, 0, 0, 1]]}`, []float64{0, 1.24, 1.15, 1.05, 0, 0, 0.4, 0.3}},
		{"gae defaults", `{"op": "gae", ` + row + `}`, []float64{0, 1.29, 1.2, 1.1, 0, 0, 0.4, 0.3}},
		{"gae explicit", `{"op": "gae", ` + row + `, "config": {"gamma": 1, "lam": 1, "whiten": false}}`, []float64{0, 1.29, 1.2, 1.1, 0, 0, 0.4, 0.3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := runJSON(t, c.req)
			if err != nil {
				t.Fatal(err)
			}
			got := resp["advantages"].([]any)[0].([]any)
			vec := make([]float64, len(got))
			for i, x := range got {
				vec[i] = x.(float64)
			}
			golden.CheckVec(t, "advantages", vec, c.adv)
			if _, ok := resp["returns"]; !ok {
				t.Error("no returns in the response")
			}
		})
	}
}

func TestGAEBadRequests(t *testing.T) {
	for _, c := range []struct{ name, req, want string }{
		{"unknown field", `{"op": "gae", "rewards": [[1]], "values": [[1]], "mask": [[1]], "gama": 1}`, "gama"},
		{"unknown config field", `{"op": "gae", "rewards": [[1]], "values": [[1]], "mask": [[1]], "config": {"lambda": 1}}`, "lambda"},
		{"missing values", `{"op": "gae", "rewards": [[1]], "mask": [[1]]}`, "values"},
		{"ragged rows", `{"op": "gae", "rewards": [[1, 2], [1]], "values": [[1, 2], [1, 2]], "mask": [[1, 1], [1, 1]]}`, "rewards[1]"},
		{"gamma out of range", `{"op": "gae", "rewards": [[1]], "values": [[1]], "mask": [[1]], "config": {"gamma": 1.5}}`, "Config.Gamma"},
		{"missing turn_end", `{"op": "bilevel_gae", "rewards": [[1]], "values": [[1]], "mask": [[1]]}`, "turn_end"},
		{"no turn end", `{"op": "bilevel_gae", "rewards": [[1, 1]], "values": [[1, 1]], "mask": [[1, 1]], "turn_end": [[1, 0]]}`, "turn_end[0,1]"},
		{"lam_turn", `{"op": "bilevel_gae", "rewards": [[1]], "values": [[1]], "mask": [[1]], "turn_end": [[1]], "config": {"lam_turn": -1}}`, "LambdaTurn"},
		{"tas shape", `{"op": "tas_weights", "mask": [[1, 1]], "config": {"shape": "linear"}}`, "config.shape"},
		{"tas lambda", `{"op": "tas_weights", "mask": [[1, 1]], "config": {"lambda": -1}}`, "Config.Lambda"},
		{"tas mask", `{"op": "tas_weights", "mask": [[1, 3]]}`, "mask[0,1]"},
		{"tas missing mask", `{"op": "tas_weights"}`, "mask"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := runJSON(t, c.req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

func TestTASRequestDefaults(t *testing.T) {
	resp, err := runJSON(t, `{"op": "tas_weights", "mask": [[1, 1, 1, 0]]}`)
	if err != nil {
		t.Fatal(err)
	}
	got := resp["weights"].([]any)[0].([]any)
	vec := make([]float64, len(got))
	for i, x := range got {
		vec[i] = x.(float64)
	}
	golden.CheckVec(t, "weights", vec, []float64{1.3, 1, 1.3, 0})
}

// FuzzGAERequests sends arbitrary requests of the gae, bilevel_gae and
// tas_weights ops: no panic, and a response always encodes as JSON (no NaN
// or infinity).
func FuzzGAERequests(f *testing.F) {
	if dir, err := golden.Dir(); err == nil {
		for _, op := range []string{"gae", "bilevel_gae", "tas_weights"} {
			cases, err := golden.Read(dir, op)
			if err != nil {
				f.Fatal(err)
			}
			for _, c := range cases {
				f.Add([]byte(c.Request))
			}
		}
	}
	f.Add([]byte(`{"op": "gae", "rewards": [[1e308, 1e308]], "values": [[-1e308, 0]], "mask": [[1, 1]], "config": {"whiten": true}}`))
	f.Add([]byte(`{"op": "bilevel_gae", "rewards": [[]], "values": [[]], "mask": [[]], "turn_end": [[]]}`))
	f.Add([]byte(`{"op": "tas_weights", "mask": [], "config": {"lambda": 1e308, "shape": "inverse"}}`))
	f.Fuzz(func(t *testing.T, req []byte) {
		resp, err := Run(req)
		if err != nil {
			return
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("request %q: response does not encode: %v", req, err)
		}
	})
}
