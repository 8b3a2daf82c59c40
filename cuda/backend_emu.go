//go:build cudaemu && !cuda

package cuda

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"unsafe"

	"github.com/rlpost/rlpost/cuda/internal/emu"
)

// The emulator compiles the CUDA sources themselves, not the PTX.
//
//go:embed kernels/*.cu kernels/*.cuh
var sources embed.FS

// emuBackend runs the kernels on the CPU emulator (package
// cuda/internal/emu); its device memory is host memory.
type emuBackend struct {
	lib    *emu.Library
	allocs map[devptr]bool // freed on close, as the driver frees a context's memory
}

func openBackend(ordinal int) (backend, error) {
	if ordinal != 0 {
		return nil, fmt.Errorf("cuda: device %d: the emulator has one device, 0", ordinal)
	}
	files, err := fs.Glob(sources, "kernels/*")
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	src := make(map[string]string, len(files))
	for _, f := range files {
		b, err := sources.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cuda: %w", err)
		}
		src[path.Base(f)] = string(b)
	}
	lib, err := emu.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	return &emuBackend{lib: lib, allocs: map[devptr]bool{}}, nil
}

func (e *emuBackend) device() string { return "CPU emulator (cudaemu build tag)" }

func (e *emuBackend) alloc(n int64) (devptr, error) {
	p := emu.Alloc(n)
	if p == 0 {
		return 0, fmt.Errorf("cuda: emulator: out of memory allocating %d bytes", n)
	}
	e.allocs[devptr(p)] = true
	return devptr(p), nil
}

func (e *emuBackend) free(p devptr) error {
	if !e.allocs[p] {
		return fmt.Errorf("cuda: emulator: free of %#x, which is not allocated", uint64(p))
	}
	delete(e.allocs, p)
	emu.Free(uint64(p))
	return nil
}

func (e *emuBackend) upload(dst devptr, src unsafe.Pointer, n int64) error {
	emu.Upload(uint64(dst), src, n)
	return nil
}

func (e *emuBackend) download(dst unsafe.Pointer, src devptr, n int64) error {
	emu.Download(dst, uint64(src), n)
	return nil
}

func (e *emuBackend) copyDevice(dst, src devptr, n int64) error {
	emu.Copy(uint64(dst), uint64(src), n)
	return nil
}

func (e *emuBackend) sync() error { return nil }

func (e *emuBackend) memset(dst devptr, b byte, n int64) error {
	emu.Set(uint64(dst), b, n)
	return nil
}

func (e *emuBackend) launch(kernel string, blocks int, args []uint64) error {
	if err := e.lib.Launch(kernel, blocks, 1, 1, threads, args); err != nil {
		return fmt.Errorf("cuda: launch %s: %w", kernel, err)
	}
	return nil
}

func (e *emuBackend) close() error {
	for p := range e.allocs {
		emu.Free(uint64(p))
	}
	e.allocs = nil
	return nil
}

// emulated tells the tests that kernels run on the CPU emulator, which
// needs small batches.
const emulated = true
