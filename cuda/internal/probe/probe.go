//go:build cuda

// Package probe initialises the CUDA driver before gorgonia.org/cu does, so
// that a program without a usable driver or device learns why in plain
// words, and a test binary skips its tests instead of failing.
//
// gorgonia.org/cu calls cuInit from its init function and exits the
// program with status 1 if that fails. Go initialises packages in the
// order of their import paths among those whose imports are ready (the Go
// spec, "Package initialization"); this package imports nothing that cu
// does not, and its path sorts before "gorgonia.org/cu", so its init runs
// first.
package probe

/*
#cgo LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/lib/x86_64-linux-gnu
#cgo linux CFLAGS: -I/usr/local/cuda/include
#include <cuda.h>

static int probe_init(void) { return (int)cuInit(0); }

static const char* probe_error(int r) {
	const char* s = 0;
	if (cuGetErrorName((CUresult)r, &s) != CUDA_SUCCESS || s == 0) return "unknown CUresult";
	return s;
}
*/
import "C"

import "os"

func init() {
	r := C.probe_init()
	if r == 0 {
		return
	}
	why := "cuInit: " + C.GoString(C.probe_error(r))
	if isTestBinary() {
		// A test binary built with -tags cuda, run where there is no GPU:
		// every test of the binary needs the device, so skip them all.
		os.Stdout.WriteString("cuda: no usable CUDA device (" + why + "); skipping every test of this binary\nPASS\n")
		os.Exit(0)
	}
	os.Stderr.WriteString("this program was built with -tags cuda and needs a CUDA driver and device (" + why +
		"); build it without the tag to run on the CPU\n")
	os.Exit(1)
}

// isTestBinary reports whether the program is a Go test binary: go test
// names it pkg.test and passes it -test.* flags. (testing.Testing would
// say so too, but importing testing would let gorgonia.org/cu initialise
// first.)
func isTestBinary() bool {
	for _, a := range os.Args[1:] {
		if len(a) > 6 && a[:6] == "-test." {
			return true
		}
	}
	n := os.Args[0]
	return len(n) > 5 && n[len(n)-5:] == ".test"
}
