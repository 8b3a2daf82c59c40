package apitest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/appo"
	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/tensor/dense"
	"github.com/stretchr/testify/require"
)

// TestUnconvertedOpsRejectPacked: every exported function that still reads
// rows at b·T rejects a packed batch (tensor.Packed) in any batch argument
// with ErrShape and a message saying so, rather than misreading it. Each
// packed batch has as many tokens as a padded one of its [B, T] (rows of
// 3 and 3), the layout a misreading function would get right by accident,
// and rows of 3 and 1.
func TestUnconvertedOpsRejectPacked(t *testing.T) {
	padded := func() tensor.Batch[float64] {
		x, _ := tensor.FromSlice([]float64{1, 1, 1, 1, 0, 0}, 2, 3)
		return x
	}
	packs := map[string]func() tensor.Batch[float64]{
		"rows 3,3": func() tensor.Batch[float64] {
			x, _ := tensor.Packed([]float64{1, 1, 1, 1, 0, 0}, []int{0, 3, 6})
			return x
		},
		"rows 3,1": func() tensor.Batch[float64] { x, _ := tensor.Packed([]float64{1, 1, 1, 1}, []int{0, 3, 4}); return x },
	}
	// Each op takes its batch arguments as a slice, to put a packed one at
	// each position in turn.
	ops := []struct {
		name string
		args int
		run  func(b []tensor.Batch[float64]) error
	}{
		{"gae.TurnEnds", 2, func(b []tensor.Batch[float64]) error { return gae.TurnEnds(b[0], b[1]) }},
		{"gae.PlaceTurnRewards", 3, func(b []tensor.Batch[float64]) error { return gae.PlaceTurnRewards(b[0], b[1], b[2]) }},
		{"gae.AddKLPenalty", 3, func(b []tensor.Batch[float64]) error { return gae.AddKLPenalty(b[0], b[1], b[2], 0.1) }},
		{"appo.NewDense", 1, func(b []tensor.Batch[float64]) error { _, err := appo.NewDense(b[0], []int{3, 3}); return err }},
		{"appo.FrameAttention", 2, func(b []tensor.Batch[float64]) error {
			return appo.FrameAttention(b[0], []tensor.Batch[float64]{b[1]}, 1, []appo.Span{{Start: 0, End: 1}, {Start: 1, End: 2}, {Start: 2, End: 3}})
		}},
		{"dense.FromBatch", 1, func(b []tensor.Batch[float64]) error { _, err := dense.FromBatch(b[0]); return err }},
		{"tensor.PrefixMask", 1, func(b []tensor.Batch[float64]) error { return tensor.PrefixMask(b[0], []int{1, 2}) }},
	}
	for _, op := range ops {
		for i := range op.args {
			for name, pack := range packs {
				t.Run(fmt.Sprintf("%s/arg%d/%s", op.name, i, name), func(t *testing.T) {
					args := make([]tensor.Batch[float64], op.args)
					for k := range args {
						args[k] = padded()
					}
					args[i] = pack()
					err := op.run(args)
					var ae *tensor.ArgError
					require.ErrorIs(t, err, tensor.ErrShape, "want an ErrShape *tensor.ArgError")
					require.ErrorAs(t, err, &ae, "want an ErrShape *tensor.ArgError")
					if want := "packed"; !strings.Contains(err.Error(), want) {
						t.Errorf("%v: does not say %q", err, want)
					}
				})
			}
		}
	}
}
