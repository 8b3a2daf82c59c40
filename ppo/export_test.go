package ppo

import "unsafe"

// SetKernelLanes selects the assembly kernel by its width (16, 8) or the
// Go loop (0) for tests that compare them, and returns the previous
// setting.
func SetKernelLanes(lanes int) int {
	old := kernelLanes
	kernelLanes = lanes
	return old
}

// RowAccSize is the size of a row's accumulator.
func RowAccSize() uintptr { return unsafe.Sizeof(rowAcc{}) }
