//go:build !linux

package mathverify

import "time"

// threadCPU returns the wall time of f where the thread's CPU time is not
// available.
func threadCPU(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
