//go:build !unix

package appo_test

func cpuTime() (int64, bool) { return 0, false }
