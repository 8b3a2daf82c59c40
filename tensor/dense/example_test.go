package dense_test

import (
	"fmt"

	gtensor "gorgonia.org/tensor"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/tensor/dense"
)

// A trainer that holds its log-probabilities in a gorgonia tensor hands
// them to rlpost without a copy; a sliced view of that tensor is refused
// (its backing array is not its elements) and must be copied.
func Example() {
	logp := gtensor.New(gtensor.WithShape(2, 3), gtensor.WithBacking([]float32{-1, -2, -3, -4, -5, -6}))
	b, err := dense.ToBatch[float32](logp)
	fmt.Println(b.Shape, b.At(1, 2), err)

	view, _ := logp.Slice(nil, gtensor.S(1, 3)) // columns 1 and 2
	_, err = dense.ToBatch[float32](view.(*gtensor.Dense))
	fmt.Println(err != nil)
	c, _ := dense.CopyToBatch[float32](view.(*gtensor.Dense))
	fmt.Println(tensor.Rows[float32](c))

	back, _ := dense.FromBatch(b) // and back, sharing storage
	fmt.Println(back.Shape())
	// Output:
	// {2 3} -6 <nil>
	// true
	// [[-2 -3] [-5 -6]]
	// (2, 3)
}
