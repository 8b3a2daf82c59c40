//go:build cuda || cudaemu

package bench

import "testing"

// TestCUDAOps runs every cuda op on a small batch: each works, measures the
// round trip, and covers what the cpu op covers.
func TestCUDAOps(t *testing.T) {
	ops := Ops("cuda")
	if len(ops) != 5 {
		t.Fatalf("cuda ops %v, want policy_loss, gae, bilevel_gae, group_advantages, tas_weights", ops)
	}
	for _, op := range ops {
		res, err := Run(op, "cuda", 4, 320, 2)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if res.Tokens == 0 || !(res.NsPerToken > 0) || res.CopyNsPerToken == nil || !(*res.CopyNsPerToken > 0) {
			t.Errorf("%s: %+v", op, res)
		}
	}
}
