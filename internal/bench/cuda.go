//go:build cuda || cudaemu

package bench

import (
	"sync"

	"github.com/rlpost/rlpost/cuda"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/benchdata"
	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

// The cuda device runs the same work as the cpu one through package cuda
// (with the cudaemu tag, through its CPU emulator, whose times mean
// nothing). Setup uploads the inputs and allocates the outputs; an
// iteration is one call on resident data, which ends when its status is
// back on the host; the copy iteration is the round trip a trainer without
// resident data would add: every input up, every output down.
func init() {
	Register("policy_loss", "cuda", cudaPolicyLoss)
	Register("gae", "cuda", cudaGAE)
	Register("bilevel_gae", "cuda", cudaBiLevel)
	Register("group_advantages", "cuda", cudaGroupAdvantages)
	Register("tas_weights", "cuda", cudaTASWeights)
}

var (
	device     *cuda.Context
	deviceErr  error
	deviceOnce sync.Once
)

// openDevice opens GPU 0 once for the process.
func openDevice() (*cuda.Context, error) {
	deviceOnce.Do(func() { device, deviceErr = cuda.Open(0) })
	return device, deviceErr
}

// resident is a host array and its device copy.
type resident struct {
	host []float32
	dev  *cuda.Buffer
}

// uploads copies the batches to the device.
func uploads(c *cuda.Context, xs ...tensor.Batch[float32]) ([]resident, error) {
	out := make([]resident, len(xs))
	for i, x := range xs {
		b, err := c.Upload(x)
		if err != nil {
			return nil, err
		}
		out[i] = resident{x.Data, b}
	}
	return out, nil
}

// outputs allocates k device outputs of shape [b, t] and their host
// copies.
func outputs(c *cuda.Context, b, t, k int) ([]resident, error) {
	out := make([]resident, k)
	for i := range out {
		buf, err := c.NewBuffer(b, t)
		if err != nil {
			return nil, err
		}
		out[i] = resident{make([]float32, b*t), buf}
	}
	return out, nil
}

// roundTrip is the copy iteration: inputs up, outputs down.
func roundTrip(in, out []resident) Iteration {
	return func() error {
		for _, r := range in {
			if err := r.dev.CopyFrom(r.host); err != nil {
				return err
			}
		}
		for _, r := range out {
			if err := r.dev.Download(r.host); err != nil {
				return err
			}
		}
		return nil
	}
}

func cudaPolicyLoss(d *benchdata.Batch) (Iteration, Iteration, error) {
	c, err := openDevice()
	if err != nil {
		return nil, nil, err
	}
	in, err := uploads(c, d.Logp, d.OldLogp, d.Advantages, d.Mask, d.RefLogp)
	if err != nil {
		return nil, nil, err
	}
	out, err := outputs(c, d.Shape.B, d.Shape.T, 1)
	if err != nil {
		return nil, nil, err
	}
	cfg := PolicyLossConfig()
	dev := cuda.PolicyInputs{Logp: in[0].dev, OldLogp: in[1].dev, Advantages: in[2].dev, Mask: in[3].dev, RefLogp: in[4].dev}
	return func() error {
		_, err := c.PolicyLoss(out[0].dev, dev, cfg)
		return err
	}, roundTrip(in, out), nil
}

func cudaGAE(d *benchdata.Batch) (Iteration, Iteration, error) {
	c, err := openDevice()
	if err != nil {
		return nil, nil, err
	}
	in, err := uploads(c, d.Rewards, d.Values, d.Mask)
	if err != nil {
		return nil, nil, err
	}
	out, err := outputs(c, d.Shape.B, d.Shape.T, 2)
	if err != nil {
		return nil, nil, err
	}
	cfg := GAEConfig()
	return func() error {
		return c.GAE(out[0].dev, out[1].dev, in[0].dev, in[1].dev, in[2].dev, cfg)
	}, roundTrip(in, out), nil
}

func cudaBiLevel(d *benchdata.Batch) (Iteration, Iteration, error) {
	c, err := openDevice()
	if err != nil {
		return nil, nil, err
	}
	ends, err := TurnEnds(d, TurnLength)
	if err != nil {
		return nil, nil, err
	}
	in, err := uploads(c, d.Rewards, d.Values, d.Mask, ends)
	if err != nil {
		return nil, nil, err
	}
	out, err := outputs(c, d.Shape.B, d.Shape.T, 2)
	if err != nil {
		return nil, nil, err
	}
	cfg := BiLevelConfig()
	return func() error {
		return c.BiLevelGAE(out[0].dev, out[1].dev, in[0].dev, in[1].dev, in[2].dev, in[3].dev, cfg)
	}, roundTrip(in, out), nil
}

func cudaGroupAdvantages(d *benchdata.Batch) (Iteration, Iteration, error) {
	c, err := openDevice()
	if err != nil {
		return nil, nil, err
	}
	in, err := uploads(c, d.Rewards)
	if err != nil {
		return nil, nil, err
	}
	out, err := outputs(c, d.Shape.B, d.Shape.T, 1)
	if err != nil {
		return nil, nil, err
	}
	cfg := grpo.DefaultConfig()
	return func() error {
		_, err := c.GroupAdvantages(out[0].dev, in[0].dev, GroupSize, cfg)
		return err
	}, roundTrip(in, out), nil
}

func cudaTASWeights(d *benchdata.Batch) (Iteration, Iteration, error) {
	c, err := openDevice()
	if err != nil {
		return nil, nil, err
	}
	in, err := uploads(c, d.Mask)
	if err != nil {
		return nil, nil, err
	}
	out, err := outputs(c, d.Shape.B, d.Shape.T, 1)
	if err != nil {
		return nil, nil, err
	}
	cfg := tas.DefaultConfig()
	return func() error {
		return c.TASWeights(out[0].dev, in[0].dev, cfg)
	}, roundTrip(in, out), nil
}
