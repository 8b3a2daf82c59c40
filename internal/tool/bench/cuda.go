//go:build cuda || cudaemu

package bench

import (
	"sync"

	"github.com/rlpost/rlpost/cuda"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
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

// setupOn uploads inputs, allocates n outputs of the batch's shape, and
// returns the call run makes of them with the round trip of their data.
func setupOn(d *benchdata.Batch, inputs []tensor.Batch[float32], n int,
	run func(c *cuda.Context, in, out []*cuda.Buffer) Iteration) (Iteration, Iteration, error) {
	c, err := openDevice()
	if err != nil {
		return nil, nil, err
	}
	in, err := uploads(c, inputs...)
	if err != nil {
		return nil, nil, err
	}
	out, err := outputs(c, d.Shape.B, d.Shape.T, n)
	if err != nil {
		return nil, nil, err
	}
	devs := func(rs []resident) []*cuda.Buffer {
		bufs := make([]*cuda.Buffer, len(rs))
		for i, r := range rs {
			bufs[i] = r.dev
		}
		return bufs
	}
	return run(c, devs(in), devs(out)), roundTrip(in, out), nil
}

func cudaPolicyLoss(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := PolicyLossConfig()
	return setupOn(d, []tensor.Batch[float32]{d.Logp, d.OldLogp, d.Advantages, d.Mask, d.RefLogp}, 1,
		func(c *cuda.Context, in, out []*cuda.Buffer) Iteration {
			dev := cuda.PolicyInputs{Logp: in[0], OldLogp: in[1], Advantages: in[2], Mask: in[3], RefLogp: in[4]}
			return func() error {
				_, err := c.PolicyLoss(out[0], dev, cfg)
				return err
			}
		})
}

func cudaGAE(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := GAEConfig()
	return setupOn(d, []tensor.Batch[float32]{d.Rewards, d.Values, d.Mask}, 2,
		func(c *cuda.Context, in, out []*cuda.Buffer) Iteration {
			return func() error { return c.GAE(out[0], out[1], in[0], in[1], in[2], cfg) }
		})
}

func cudaBiLevel(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := BiLevelConfig()
	ends, err := TurnEnds(d, TurnLength)
	if err != nil {
		return nil, nil, err
	}
	return setupOn(d, []tensor.Batch[float32]{d.Rewards, d.Values, d.Mask, ends}, 2,
		func(c *cuda.Context, in, out []*cuda.Buffer) Iteration {
			return func() error { return c.BiLevelGAE(out[0], out[1], in[0], in[1], in[2], in[3], cfg) }
		})
}

func cudaGroupAdvantages(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := grpo.DefaultConfig()
	return setupOn(d, []tensor.Batch[float32]{d.Rewards}, 1,
		func(c *cuda.Context, in, out []*cuda.Buffer) Iteration {
			return func() error {
				_, err := c.GroupAdvantages(out[0], in[0], GroupSize, cfg)
				return err
			}
		})
}

func cudaTASWeights(d *benchdata.Batch) (Iteration, Iteration, error) {
	cfg := tas.DefaultConfig()
	return setupOn(d, []tensor.Batch[float32]{d.Mask}, 1,
		func(c *cuda.Context, in, out []*cuda.Buffer) Iteration {
			return func() error { return c.TASWeights(out[0], in[0], cfg) }
		})
}
