package conform

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

const appoRequest = `{"op": "appo_weights", "rewards": [1, 0],
 "attention": [[[0.1, 0.9], [0.5, 0.5]], [[0.2, 0.3]]],
 "distributions": [[[0.5, 0.5], [0.9, 0.1]], [[0.2, 0.8]]],
 "config": {"k1": 1, "k2": 1, "k3": 1}}`

func TestAPPOWeights(t *testing.T) {
	out, err := Run([]byte(appoRequest))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	// Frame 1 is response 0's focus. Its group pairs token (0,0) = (½, ½)
	// with token (1,0) = (0.2, 0.8); the mean is (0.35, 0.65), and
	// KL((0.2, 0.8)‖p̄) = 0.054 > KL((½, ½)‖p̄) = 0.047, so response 1's
	// token gets 1 + α = 2.7 and response 0's 1.
	if want := `{"weights":[[1,1],[2.7]],"frames":[1]}`; string(got) != want {
		t.Errorf("response %s, want %s", got, want)
	}
}

func TestAPPOWeightsDefaults(t *testing.T) {
	_, cfg, err := DecodeAPPOWeights([]byte(`{"op": "appo_weights", "rewards": [1], "attention": [[[1]]], "distributions": [[[1]]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tau != 0.5 || cfg.K1 != 15 || cfg.K2 != 5 || cfg.K3 != 64 || cfg.Alpha != 1.7 || cfg.Strategy.String() != "soft" {
		t.Errorf("defaults %+v, want docs/conformance.md's", cfg)
	}
}

func TestAPPOWeightsBadRequests(t *testing.T) {
	for _, c := range []struct {
		name, req string
		kind      error
		substr    string
	}{
		{"unknown field", `{"op": "appo_weights", "reward": [1]}`, nil, "unknown field"},
		{"missing rewards", `{"op": "appo_weights", "attention": [], "distributions": []}`, tensor.ErrEmpty, "rewards: empty: missing"},
		{"missing distributions", `{"op": "appo_weights", "rewards": [1], "attention": [[[1]]]}`, tensor.ErrEmpty, "distributions"},
		{"bad strategy", `{"op": "appo_weights", "config": {"strategy": "medium"}}`, nil, "config.strategy"},
		{"ragged attention row", `{"op": "appo_weights", "rewards": [1, 0], "attention": [[[1, 0]], [[1, 0], [1]]], "distributions": [[[1]], [[1], [1]]]}`,
			tensor.ErrShape, "attention[1,1]"},
		{"ragged distribution row", `{"op": "appo_weights", "rewards": [1, 0], "attention": [[[1]], [[1], [0]]], "distributions": [[[1]], [[1], [0.5, 0.5]]]}`,
			tensor.ErrShape, "distributions[1,1]"},
		{"attention and distributions disagree", `{"op": "appo_weights", "rewards": [1], "attention": [[[1], [0]]], "distributions": [[[1]]]}`,
			tensor.ErrShape, "attention[0]"},
		{"unused distribution that does not sum to 1", `{"op": "appo_weights", "rewards": [0], "attention": [[[1], [0]]], "distributions": [[[1], [0.5]]]}`,
			tensor.ErrRange, "dists[0,1]"},
		{"negative attention", `{"op": "appo_weights", "rewards": [1], "attention": [[[1], [-1]]], "distributions": [[[1], [1]]]}`,
			tensor.ErrRange, "attention[0,1,0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run([]byte(c.req))
			if err == nil || c.kind != nil && !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) {
				t.Errorf("error %v, want %v containing %q", err, c.kind, c.substr)
			}
		})
	}
}

// FuzzAPPOWeightsRequest feeds arbitrary requests through the contract:
// never a panic, and every response encodes as JSON (no NaN or Inf).
func FuzzAPPOWeightsRequest(f *testing.F) {
	f.Add(appoRequest)
	f.Add(`{"op": "appo_weights", "rewards": [1, 0, 0.5], "attention": [[], [[0.5, 0.2, 0.3]], [[0.1, 0.1, 0.1], [0.9, 0, 0]]],
	 "distributions": [[], [[0.25, 0.75]], [[1, 0], [0, 1]]], "config": {"tau": 0.4, "k1": 2, "k2": 2, "k3": 9, "alpha": 2, "strategy": "all"}}`)
	f.Add(`{"op": "appo_weights", "rewards": [1], "attention": [[[1e308, 1e308]]], "distributions": [[[1]]], "config": {"alpha": 1e308}}`)
	f.Add(`{"op": "appo_weights", "rewards": [], "attention": [], "distributions": []}`)
	f.Fuzz(func(t *testing.T, req string) {
		out, err := Run([]byte(req))
		if err != nil {
			return
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("response does not encode: %v", err)
		}
		var resp struct {
			Weights [][]float64 `json:"weights"`
		}
		if json.Unmarshal(b, &resp) == nil {
			for _, row := range resp.Weights {
				for _, w := range row {
					if w < 1 || math.IsInf(w, 0) {
						t.Fatalf("weight %v", w)
					}
				}
			}
		}
	})
}
