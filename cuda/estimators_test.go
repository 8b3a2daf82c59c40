//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/tensor"
)

// TestGroupAdvantagesRefusesOtherEstimators: the device kernels compute
// GRPO and RLOO only; any other estimator or size-1 rule is an error, not
// GRPO's numbers under another name.
func TestGroupAdvantagesRefusesOtherEstimators(t *testing.T) {
	c := device(t)
	buf, err := c.UploadVec([]float32{1, 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []grpo.Config{{Estimator: grpo.GPG}, {Estimator: grpo.PassK}, grpo.VerlDefaults()} {
		if _, err := c.GroupAdvantages(buf, buf, 2, cfg); !errors.Is(err, tensor.ErrRange) {
			t.Errorf("%+v: err = %v, want ErrRange", cfg, err)
		}
	}
}
