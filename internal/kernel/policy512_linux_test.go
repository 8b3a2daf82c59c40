//go:build linux && amd64 && !purego

package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
)

// BenchmarkPolicyTokens times each width of the kernel alone on a row of
// 4096 tokens (the last quarter masked): kl=3 is the configuration of
// `rlpost bench -op policy_loss` (reference log-probs, k3, dual clip, no
// proximal policy or weights), kl=0 the same without the KL term. Besides
// wall time per token it reports cpu-ns/token, the CPU time of the
// benchmark's thread (getrusage RUSAGE_THREAD), which time slices given to
// other processes on a shared machine do not inflate.
func BenchmarkPolicyTokens(b *testing.B) {
	for _, kl := range []int64{0, 3} {
		for _, lanes := range []int{8, 16} {
			b.Run(fmt.Sprintf("kl=%d/lanes=%d", kl, lanes), func(b *testing.B) {
				if lanes == 16 && !HasAVX512 || !HasAVX2 {
					b.Skip("no kernel of this width on this processor or build")
				}
				const n = 4096
				row := newPolicyBatch(rand.New(rand.NewPCG(1, 2)), n, false)
				for i := 3072; i < n; i++ {
					row.mask[i] = 0
				}
				c := policyCase{ref: kl > 0, kl: kl, dual: 3, klClamp: math.Inf(1), capAt: math.Inf(1)}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					row.kernel(c).RunLanes(lanes)
				}
				cpu := threadCPU() - cpu0
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/token")
				b.ReportMetric(float64(cpu)/float64(b.N)/n, "cpu-ns/token")
			})
		}
	}
}

// threadCPU returns the CPU time the calling thread has used, in
// nanoseconds.
func threadCPU() int64 {
	const rusageThread = 1 // RUSAGE_THREAD
	var r syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &r); err != nil {
		return 0
	}
	return r.Utime.Nano() + r.Stime.Nano()
}
