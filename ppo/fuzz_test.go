package ppo_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// fuzzReader hands out values from fuzz bytes, then zeros.
type fuzzReader struct{ data []byte }

func (r *fuzzReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *fuzzReader) float32() float32 {
	var b [4]byte
	for i := range b {
		b[i] = r.byte()
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[:]))
}

// small returns a float64 from one byte: mostly ordinary values, sometimes
// the edge cases a config can hold.
func (r *fuzzReader) small() float64 {
	switch v := r.byte(); {
	case v < 200:
		return float64(v) / 50
	case v < 210:
		return math.NaN()
	case v < 220:
		return math.Inf(1)
	case v < 230:
		return -float64(v - 220)
	default:
		return 0
	}
}

func (r *fuzzReader) batch(b, t int, maskLike bool) tensor.Batch[float32] {
	x := tensor.MustNew[float32](b, t)
	for i := range x.Data {
		if maskLike {
			x.Data[i] = float32(r.byte() % 3) // 0, 1, and the invalid 2
			if x.Data[i] == 2 && r.byte()%8 != 0 {
				x.Data[i] = 1
			}
		} else {
			x.Data[i] = r.float32()
		}
	}
	return x
}

// FuzzPolicyLoss feeds arbitrary shapes, values (NaN, ±Inf, huge) and
// configurations: PolicyLoss must return an error or a finite loss with
// finite gradients, and never panic.
func FuzzPolicyLoss(f *testing.F) {
	f.Add([]byte{2, 3, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{4, 8, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 0x7f, 0x80, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{data}
		b, T := int(r.byte()%6), int(r.byte()%40)
		opts := r.byte()
		cfg := ppo.Config{
			ClipLow: r.small() / 4, ClipHigh: r.small(), DualClip: r.small() * 2, LogRatioClamp: r.small() * 10,
			RatioLevel: ppo.RatioLevel(opts >> 6 & 1), KLCoef: r.small(), KLEstimator: ppo.KLEstimator(r.byte() % 4),
			KLClamp: r.small(), BehaveCap: r.small() * 2, BehaveCapMode: ppo.CapMode(r.byte() % 3),
			Reduction: ppo.Reduction{Mode: ppo.Aggregation(r.byte() % 6), Norm: r.small(), TokenCount: r.small() * 50, SeqCount: r.small()},
		}
		in := ppo.Inputs[float32]{Logp: r.batch(b, T, false), OldLogp: r.batch(b, T, false),
			Advantages: r.batch(b, T, false), Mask: r.batch(b, T, true)}
		if opts&1 != 0 {
			in.ProxLogp = r.batch(b, T, false)
		}
		if opts&2 != 0 {
			in.RefLogp = r.batch(b, T, false)
		}
		if opts&4 != 0 {
			in.TokenWeights = r.batch(b, T, false)
		}
		if opts&8 != 0 && b > 0 {
			in.OldLogp = r.batch(b-1, T, false)
		}
		grad := make([]float32, b*T)
		res, err := ppo.PolicyLoss(like(grad, in.Logp), in, cfg)
		if err != nil {
			return
		}
		if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
			t.Fatalf("loss %v without an error", res.Loss)
		}
		for k, g := range grad {
			if !tensor.IsFinite(g) {
				t.Fatalf("grad[%d] = %v without an error", k, g)
			}
		}
	})
}

// FuzzValueLoss does the same for the critic loss.
func FuzzValueLoss(f *testing.F) {
	f.Add([]byte{2, 3, 10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{data}
		b, T := int(r.byte()%6), int(r.byte()%40)
		cfg := ppo.ValueConfig{Clip: r.small(), Reduction: ppo.Reduction{Mode: ppo.Aggregation(r.byte() % 6), TokenCount: r.small()}}
		in := ppo.ValueInputs[float32]{Values: r.batch(b, T, false), OldValues: r.batch(b, T, false),
			Returns: r.batch(b, T, false), Mask: r.batch(b, T, true)}
		grad := make([]float32, b*T)
		res, err := ppo.ValueLoss(like(grad, in.Values), in, cfg)
		if err != nil {
			return
		}
		if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
			t.Fatalf("loss %v without an error", res.Loss)
		}
		for k, g := range grad {
			if !tensor.IsFinite(g) {
				t.Fatalf("grad[%d] = %v without an error", k, g)
			}
		}
	})
}
