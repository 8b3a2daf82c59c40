package ppo_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/internal/tool/bench"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// BenchmarkRolloutCPUPerCall measures what the rollout correction adds to
// the loss on a shared machine, where wall-clock medians jump whenever the
// operating system preempts a call: each of b.N rounds calls the plain
// loss (BenchmarkPolicyLoss) and the rollout-corrected one
// (BenchmarkPolicyLossRollout) once each, on one locked OS thread with
// GOMAXPROCS 1, and times them by that thread's CPU clock. It reports the
// median CPU ns per position of each and their ratio.
func BenchmarkRolloutCPUPerCall(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := benchdata.New(64, 4096)
	if err != nil {
		b.Fatal(err)
	}
	grad := tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	plain := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp}
	corrected := plain
	corrected.RolloutLogp = benchRollout(d)
	calls := []struct {
		in  ppo.Inputs[float32]
		cfg ppo.Config
		ns  []float64
	}{{in: plain, cfg: bench.PolicyLossConfig()}, {in: corrected, cfg: bench.PolicyLossRolloutConfig()}}
	cpu := func() time.Duration {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ts.Nano())
	}
	for i := range calls {
		for range 3 { // warm the scratch
			if _, err := ppo.PolicyLoss(grad, calls[i].in, calls[i].cfg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range calls {
			t0 := cpu()
			if _, err := ppo.PolicyLoss(grad, calls[i].in, calls[i].cfg); err != nil {
				b.Fatal(err)
			}
			calls[i].ns = append(calls[i].ns, float64(cpu()-t0)/float64(d.Shape.Size()))
		}
	}
	median := func(x []float64) float64 {
		slices.Sort(x)
		return x[len(x)/2]
	}
	p, r := median(calls[0].ns), median(calls[1].ns)
	b.ReportMetric(p, "plain-cpu-ns/position")
	b.ReportMetric(r, "rollout-cpu-ns/position")
	b.ReportMetric(r/p, "rollout/plain")
}
