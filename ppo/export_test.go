package ppo

import "unsafe"

// SetAVX2 turns the assembly kernel on or off for tests that compare it with
// the Go loop, and returns the previous setting.
func SetAVX2(on bool) bool {
	old := useAVX2
	useAVX2 = on
	return old
}

// RowAccSize is the size of a row's accumulator.
func RowAccSize() uintptr { return unsafe.Sizeof(rowAcc{}) }
