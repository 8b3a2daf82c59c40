package workers_test

import (
	"fmt"

	"github.com/rlpost/rlpost/workers"
)

// A trainer that scores four micro-batches at once on its own goroutines
// gives each compute call two goroutines, not all of them.
func ExampleSetMax() {
	prev := workers.SetMax(2)
	defer workers.SetMax(prev)
	fmt.Println(workers.Max() <= 2)
	// Output: true
}
