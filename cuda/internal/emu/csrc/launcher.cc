// launcher.cc runs kernels registered by the emulator's translation units.
// The threads of a block are fibers (ucontext) on the calling OS thread,
// scheduled round by round: each round resumes every thread that has not
// returned, and each runs until it reaches __syncthreads or returns. So a
// barrier waits for exactly the threads that have not exited, as on the
// GPU, and one block runs at a time, which is what lets __shared__
// variables be statics. A round whose threads stopped at different
// barriers is a bug in the kernel (undefined behaviour on the GPU) and is
// reported.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <ucontext.h>

#include "shim.h"

uint3 threadIdx;
uint3 blockIdx;

namespace {

struct entry {
	int nargs;
	emu_thunk thunk;
};

std::map<std::string, entry>& registry() {
	static std::map<std::string, entry> r;
	return r;
}

const size_t stack_size = 256 * 1024;

struct fiber {
	ucontext_t ctx;
	char* stack = nullptr;
	bool done = false;
};

ucontext_t scheduler;
fiber* fibers = nullptr;
int nfibers = 0;
int current = 0;
emu_thunk cur_thunk;
const uint64_t* cur_argv;
const char* barrier_file; // where the threads of the current round stopped
int barrier_line;
bool divergent;

void fiber_main(int tid) {
	cur_thunk(cur_argv);
	fibers[tid].done = true;
	swapcontext(&fibers[tid].ctx, &scheduler);
}

} // namespace

void emu_syncthreads(const char* file, int line) {
	if (barrier_file == nullptr) {
		barrier_file = file;
		barrier_line = line;
	} else if (barrier_line != line || strcmp(barrier_file, file) != 0) {
		divergent = true;
	}
	swapcontext(&fibers[current].ctx, &scheduler);
}

void emu_register(const char* name, int nargs, emu_thunk thunk) { registry()[name] = entry{nargs, thunk}; }

// run_block runs one block of n threads to completion; it returns false if
// the threads stopped at different barriers.
static bool run_block(int n) {
	for (int t = 0; t < n; t++) {
		fiber& f = fibers[t];
		f.done = false;
		getcontext(&f.ctx);
		f.ctx.uc_stack.ss_sp = f.stack;
		f.ctx.uc_stack.ss_size = stack_size;
		f.ctx.uc_link = nullptr;
		makecontext(&f.ctx, (void (*)())fiber_main, 1, t);
	}
	for (;;) {
		barrier_file = nullptr;
		divergent = false;
		int live = 0;
		for (int t = 0; t < n; t++) {
			if (fibers[t].done) continue;
			current = t;
			threadIdx = uint3{(unsigned)t, 0, 0};
			swapcontext(&scheduler, &fibers[t].ctx);
			if (!fibers[t].done) live++;
		}
		if (divergent) return false;
		if (live == 0) return true;
	}
}

// emu_launch runs kernel name on a grid of gx·gy·gz blocks of bx threads
// with the given parameter words. It returns 0, or −1 with a message in
// err.
extern "C" __attribute__((visibility("default"))) int emu_launch(const char* name, long long gx, long long gy, long long gz, long long bx,
                          const uint64_t* argv, int nargs, char* err, int errlen) {
	auto it = registry().find(name);
	if (it == registry().end()) {
		snprintf(err, errlen, "no kernel named %s", name);
		return -1;
	}
	if (it->second.nargs != nargs) {
		snprintf(err, errlen, "kernel %s takes %d parameters, got %d", name, it->second.nargs, nargs);
		return -1;
	}
	if (bx > nfibers) {
		fiber* f = new fiber[bx];
		for (long long t = 0; t < bx; t++) f[t].stack = (char*)malloc(stack_size);
		for (int t = 0; t < nfibers; t++) free(fibers[t].stack);
		delete[] fibers;
		fibers = f;
		nfibers = (int)bx;
	}
	cur_thunk = it->second.thunk;
	cur_argv = argv;
	for (long long z = 0; z < gz; z++) {
		for (long long y = 0; y < gy; y++) {
			for (long long x = 0; x < gx; x++) {
				blockIdx = uint3{(unsigned)x, (unsigned)y, (unsigned)z};
				if (!run_block((int)bx)) {
					snprintf(err, errlen, "kernel %s, block (%lld, %lld, %lld): threads wait at different __syncthreads",
					         name, x, y, z);
					return -1;
				}
			}
		}
	}
	return 0;
}
