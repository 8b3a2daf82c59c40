//go:build !linux

package replay_test

import "time"

// threadCPU is not available outside Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
