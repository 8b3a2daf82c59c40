package appo

import "math"

// logf is the natural logarithm the discrepancies use.
func logf(x float64) float64 { return math.Log(x) }
