package verifiers_test

import (
	"context"
	"fmt"

	"github.com/rlpost/rlpost/verifiers"
)

// APPO's temporal-grounding reward: the 1-D IoU of the predicted and the
// true span.
func ExampleTemporalIoUVerifier() {
	res, err := verifiers.Default.Verify(context.Background(), "temporal_iou",
		"<think>the kitten turns at 3 s</think><answer>[2.5, 7.0]</answer>", "[3.0, 7.0]", nil)
	fmt.Printf("%.4f %v %s %v\n", res.Score, res.Correct, res.Parsed, err)
	// Output: 0.8889 true [2.5, 7] <nil>
}

// The five reasoning formats of VAGEN; Grounding-WorldModeling requires
// <reasoning> between the observation and the prediction.
func ExampleVAGENFormat() {
	resp := "<think><observation>box below player</observation><reasoning>push down</reasoning>" +
		"<prediction>box on target</prediction></think><answer>Down</answer>"
	for _, style := range verifiers.VAGENStyles() {
		ok, _ := verifiers.VAGENFormat(resp, style)
		fmt.Println(style, ok)
	}
	// Output:
	// no_think false
	// free_think false
	// grounding false
	// worldmodeling false
	// grounding_worldmodeling true
}
