package conform_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
)

// FuzzGroupAdvantages: any group_advantages request — every estimator,
// preset, mask and input — gives an error or one finite advantage per
// reward, never a panic.
func FuzzGroupAdvantages(f *testing.F) {
	if dir, err := golden.Dir(); err == nil {
		if cases, err := golden.Read(dir, "group_advantages_estimators"); err == nil {
			for _, c := range cases {
				f.Add([]byte(c.Request))
			}
		}
	}
	f.Add([]byte(`{"op": "group_advantages", "rewards": [1, 0, 2], "group_size": 3, "scored": [true, false, true], "config": {"estimator": "grpo_passk", "k": 2}}`))
	f.Fuzz(func(t *testing.T, req []byte) {
		var head struct {
			Op      string `json:"op"`
			Rewards []json.RawMessage
		}
		if json.Unmarshal(req, &head) != nil || head.Op != "group_advantages" || len(head.Rewards) > 4096 {
			return
		}
		resp, err := conform.Run(req)
		if err != nil {
			return
		}
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("response does not encode: %v", err)
		}
		var out struct{ Advantages []float64 }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Advantages) != len(head.Rewards) {
			t.Fatalf("%d advantages for %d rewards", len(out.Advantages), len(head.Rewards))
		}
		for i, a := range out.Advantages {
			if math.IsNaN(a) || math.IsInf(a, 0) {
				t.Fatalf("advantage %d = %v", i, a)
			}
		}
	})
}
