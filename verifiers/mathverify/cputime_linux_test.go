package mathverify

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPU runs f on one locked OS thread and returns the CPU time that
// thread spent in it: the work of the call, without the time a loaded
// machine gives to other processes.
func threadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b syscall.Rusage
	if syscall.Getrusage(rusageThread, &a) != nil {
		start := time.Now()
		f()
		return time.Since(start)
	}
	f()
	if syscall.Getrusage(rusageThread, &b) != nil {
		return 0
	}
	return time.Duration(b.Utime.Nano() - a.Utime.Nano() + b.Stime.Nano() - a.Stime.Nano())
}
