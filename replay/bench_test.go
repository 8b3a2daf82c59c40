package replay_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/rlpost/rlpost/replay"
)

// cpuTimer reports the thread CPU time per op (cpu-ns/op) of a benchmark
// loop next to its wall time; start it right before the loop.
func cpuTimer(b *testing.B) func() {
	runtime.LockOSThread()
	start, ok := threadCPU()
	return func() {
		end, _ := threadCPU()
		runtime.UnlockOSThread()
		if ok {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// benchPool returns n experiences over the given number of prompts, in a
// scrambled prompt order, with binary rewards and 16 shared log-probs.
func benchPool(n, prompts int) []replay.Experience { return benchPoolOf(n, prompts, false) }

// benchPoolOf is benchPool with uniform rewards in [0, 1) if continuous:
// every update then moves R̄ in the multiset, where binary rewards leave
// it in place whenever the reward equals the one leaving the window.
func benchPoolOf(n, prompts int, continuous bool) []replay.Experience {
	rng := rand.New(rand.NewPCG(41, 42))
	logp := make([]float32, 16)
	for i := range logp {
		logp[i] = -float32(rng.ExpFloat64())
	}
	pool := make([]replay.Experience, n)
	for i := range pool {
		pool[i] = replay.Experience{Prompt: uint64(rng.IntN(prompts)), Logp: logp, Reward: float64(rng.IntN(2))}
		if continuous {
			pool[i].Reward = rng.Float64()
		}
	}
	return pool
}

// fullBuffer returns a buffer at its default capacity of 10 000, full, its
// VCRS tracking every one of prompts prompts.
func fullBuffer(b *testing.B, prompts int) *replay.Buffer {
	buf, err := replay.New(replay.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for p := range prompts {
		buf.Observe(uint64(p), float64(p%21)/20)
	}
	for _, e := range benchPool(30000, prompts) {
		if _, err := buf.Add(e); err != nil {
			b.Fatal(err)
		}
	}
	if buf.Len() != 10000 {
		b.Fatalf("buffer holds %d", buf.Len())
	}
	return buf
}

// BenchmarkAdd measures Add into a full buffer of 10 000 (every Add evicts)
// with the VCRS tracking 10 000 prompts, and 1 000 000 to show the cost of
// a tracker far larger than the caches; binary rewards, and continuous
// ones.
func BenchmarkAdd(b *testing.B) {
	for _, c := range []struct {
		prompts    int
		continuous bool
	}{{10000, false}, {10000, true}, {1000000, false}} {
		rewards := "binary"
		if c.continuous {
			rewards = "uniform"
		}
		b.Run(fmt.Sprintf("prompts=%d/rewards=%s", c.prompts, rewards), func(b *testing.B) {
			buf := fullBuffer(b, c.prompts)
			pool := benchPoolOf(1<<16, c.prompts, c.continuous)
			b.ReportAllocs()
			i := 0
			stop := cpuTimer(b)
			for b.Loop() {
				if _, err := buf.Add(pool[i&(len(pool)-1)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			stop()
		})
	}
}

// BenchmarkAddGroup measures AddGroup of AVATAR's 4 on-policy responses to
// one prompt; ns/op is per group.
func BenchmarkAddGroup(b *testing.B) {
	buf := fullBuffer(b, 10000)
	pool := benchPool(1<<16, 10000)
	for i := 0; i < len(pool); i += 4 {
		for j := 1; j < 4; j++ {
			pool[i+j].Prompt = pool[i].Prompt
		}
	}
	b.ReportAllocs()
	i := 0
	stop := cpuTimer(b)
	for b.Loop() {
		j := (4 * i) & (len(pool) - 1)
		if err := buf.AddGroup(nil, pool[j:j+4]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	stop()
}

// BenchmarkAddParallel measures Add from all processors at once: the cost
// of the shared lock under contention.
func BenchmarkAddParallel(b *testing.B) {
	buf := fullBuffer(b, 10000)
	pool := benchPool(1<<16, 10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(pool))
		for pb.Next() {
			buf.Add(pool[i&(len(pool)-1)])
			i++
		}
	})
}

// BenchmarkSample measures Sample from a full buffer of 10 000 with the
// default curriculum's weights half-way through training.
func BenchmarkSample(b *testing.B) {
	buf := fullBuffer(b, 10000)
	w, _ := replay.DefaultCurriculum().Weights(0.5)
	for _, c := range []struct {
		k       int
		replace bool
	}{{4, false}, {4, true}, {64, false}} {
		b.Run(fmt.Sprintf("K=%d/replace=%v", c.k, c.replace), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			dst := make([]replay.Sampled, c.k)
			opt := replay.SampleOptions{Weights: w, Replace: c.replace}
			b.ReportAllocs()
			stop := cpuTimer(b)
			for b.Loop() {
				if n, err := buf.Sample(dst, rng, opt); n != c.k || err != nil {
					b.Fatal(n, err)
				}
			}
			stop()
		})
	}
}

// BenchmarkObserve measures a VCRS update alone with 10 000 and 1 000 000
// tracked prompts.
func BenchmarkObserve(b *testing.B) {
	for _, prompts := range []int{10000, 1000000} {
		b.Run(fmt.Sprint("prompts=", prompts), func(b *testing.B) {
			v, _ := replay.NewVCRS(replay.DefaultWindow, replay.DefaultMaxPrompts)
			for p := range prompts {
				v.Observe(uint64(p), float64(p%21)/20)
			}
			pool := benchPool(1<<16, prompts)
			b.ReportAllocs()
			i := 0
			stop := cpuTimer(b)
			for b.Loop() {
				e := &pool[i&(len(pool)-1)]
				v.Observe(e.Prompt, e.Reward)
				i++
			}
			stop()
		})
	}
}

// BenchmarkVCRSMemory fills a VCRS to its default capacity, 2^20 prompts
// with full windows of 20, and reports the heap it holds per prompt. Run
// it once: -benchtime 1x.
func BenchmarkVCRSMemory(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, _ := replay.NewVCRS(replay.DefaultWindow, replay.DefaultMaxPrompts)
		for p := range replay.DefaultMaxPrompts {
			for k := range replay.DefaultWindow {
				v.Observe(uint64(p)*0x9e3779b97f4a7c15, float64((p+k)%7)/7)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(v.Len()), "bytes/prompt")
		runtime.KeepAlive(v)
	}
}

// BenchmarkStep measures the hybrid objective on AVATAR's group of eight,
// 4 fresh and 4 replayed responses of 1 024 tokens, float32; ns/token is
// over the 8 192 positions.
func BenchmarkStep(b *testing.B) {
	s := randomStep[float32](8, 1, 4, 4, 1024, false)
	cfg := replay.DefaultObjectiveConfig()
	cfg.Loss.KLCoef = 0
	o, err := replay.NewObjective[float32](cfg)
	if err != nil {
		b.Fatal(err)
	}
	gOn, gOff := make([]float32, s.on.Logp.Size()), make([]float32, s.off.Logp.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Step(like(gOn, s.on.Logp), like(gOff, s.off.Logp), s.on, s.off); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(gOn)+len(gOff)), "ns/token")
}

// BenchmarkSnapshot measures Snapshot of a full buffer of 10 000
// experiences of 256 log-probs each (about 10 MB).
func BenchmarkSnapshot(b *testing.B) {
	buf := large(b)
	var n countingWriter
	buf.Snapshot(&n)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if err := buf.Snapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}
