//go:build linux

package replay_test

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling OS thread, which a
// benchmark locked to its thread spends on nothing but its loop: unlike
// wall time, other jobs on a shared machine hardly change it.
func threadCPU() (time.Duration, bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
