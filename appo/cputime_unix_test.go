//go:build unix

package appo_test

import "syscall"

// cpuTime returns the CPU time the process has used, user and system, in
// nanoseconds; ok is false where the platform does not report it.
func cpuTime() (ns int64, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
