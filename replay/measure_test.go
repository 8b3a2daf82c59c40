package replay_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlpost/rlpost/replay"
	"github.com/stretchr/testify/require"
)

// The measurements of docs' benchmarks: run with
//
//	RLPOST_REPLAY_MEASURE=1048576 go test -run 'TestMeasure' -v ./replay
//
// (the value is the number of prompts the VCRS tracks; with
// RLPOST_REPLAY_CAPACITY=N as well, the buffer's capacity is N one-token
// experiences instead of 10 000 of 512 tokens). They are skipped
// otherwise: each builds a buffer of a few hundred megabytes.
const measureEnv = "RLPOST_REPLAY_MEASURE"

func measurePrompts(t *testing.T) int {
	s := os.Getenv(measureEnv)
	if s == "" {
		t.Skip("set " + measureEnv + "=<prompts> to measure")
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%s=%q, want a prompt count", measureEnv, s)
	require.GreaterOrEqual(t, n, 1, "%s=%q, want a prompt count", measureEnv, s)
	return n
}

// measured builds a buffer tracking n prompts (one reward each, W = 20) and
// holding 10 000 experiences of 512 log-probs and 512 tokens.
func measured(t testing.TB, n int) *replay.Buffer {
	cfg := replay.DefaultConfig()
	cfg.MaxPrompts = max(n, cfg.MaxPrompts)
	b, err := replay.New(cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for p := range uint64(n) {
		require.NoError(t, b.Observe(p, float64(rng.IntN(2))))
	}
	logp, tokens := make([]float32, 512), make([]int32, 512)
	for i := range logp {
		logp[i], tokens[i] = -0.5, int32(i)
	}
	// RLPOST_REPLAY_CAPACITY=N fills a buffer of capacity N with one-token
	// experiences instead: the shape where the tiers' rings dominate.
	if c := os.Getenv("RLPOST_REPLAY_CAPACITY"); c != "" {
		n, err := strconv.Atoi(c)
		require.NoError(t, err)
		cfg.Capacity = n
		b, err = replay.New(cfg)
		require.NoError(t, err)
		for p := range uint64(min(n, cfg.MaxPrompts)) {
			require.NoError(t, b.Observe(p, float64(rng.IntN(2))))
		}
		logp, tokens = logp[:1], nil
	}
	for i := range cfg.Capacity {
		e := replay.Experience{Prompt: uint64(rng.IntN(n)), Logp: logp, Tokens: tokens, Reward: float64(i % 2)}
		_, err := b.Add(e)
		require.NoError(t, err)
	}
	return b
}

// TestMeasureSnapshotStall: the longest an Add waits while Snapshot runs.
func TestMeasureSnapshotStall(t *testing.T) {
	n := measurePrompts(t)
	b := measured(t, n)
	var size countWriter
	require.NoError(t, b.Snapshot(&size))
	var stop atomic.Bool
	var worst, adds atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e := replay.Experience{Prompt: 1, Logp: []float32{-1}, Reward: 1}
		for !stop.Load() {
			t0 := time.Now()
			b.Add(e)
			if d := int64(time.Since(t0)); d > worst.Load() {
				worst.Store(d)
			}
			adds.Add(1)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	worst.Store(0)
	time.Sleep(300 * time.Millisecond)
	idle := time.Duration(worst.Load())
	worst.Store(0)
	t0 := time.Now()
	require.NoError(t, b.Snapshot(io.Discard))
	took := time.Since(t0)
	during := time.Duration(worst.Load())
	// The time Snapshot holds the lock is the time to its first write:
	// it takes its state under the lock and writes only after.
	g := &firstWrite{start: time.Now()}
	require.NoError(t, b.Snapshot(g))
	stop.Store(true)
	wg.Wait()
	fmt.Printf("prompts %d  snapshot %d bytes  snapshot took %v  state taken (lock held) in %v  longest Add during it %v  (longest in 300 ms without a snapshot %v)\n",
		n, int64(size), took.Round(time.Millisecond), g.took.Round(time.Microsecond), during.Round(10*time.Microsecond), idle.Round(10*time.Microsecond))
}

// firstWrite records when its first Write came, after start.
type firstWrite struct {
	start time.Time
	took  time.Duration
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.took == 0 {
		w.took = time.Since(w.start)
	}
	return len(p), nil
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

const restoreChildEnv = "RLPOST_REPLAY_RESTORE_CHILD"

// TestMeasureRestorePeak saves a buffer, then loads it in a fresh child
// process and reports the child's peak resident memory (VmHWM) against the
// snapshot's size.
func TestMeasureRestorePeak(t *testing.T) {
	if path := os.Getenv(restoreChildEnv); path != "" {
		before := vmHWM(t)
		b, err := replay.LoadFile(path)
		require.NoError(t, err)
		after := vmHWM(t)
		fmt.Printf("child: peak RSS before load %d kB, after %d kB, %d experiences\n", before, after, b.Len())
		return
	}
	n := measurePrompts(t)
	path := filepath.Join(t.TempDir(), "replay.snap")
	require.NoError(t, measured(t, n).SaveFile(path))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureRestorePeak$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), restoreChildEnv+"="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %v\n%s", err, out)
	var before, after, held int64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "child:") {
			fmt.Sscanf(line, "child: peak RSS before load %d kB, after %d kB, %d experiences", &before, &after, &held)
		}
	}
	fmt.Printf("prompts %d  snapshot %d bytes  restore peak RSS %d kB (%d kB before loading)  peak/snapshot %.2f  growth/snapshot %.2f\n",
		n, fi.Size(), after, before, float64(after*1024)/float64(fi.Size()), float64((after-before)*1024)/float64(fi.Size()))
}

// vmHWM reads this process's peak resident set size in kB.
func vmHWM(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	t.Skip("no VmHWM")
	return 0
}

const shapesEnv = "RLPOST_REPLAY_SHAPES"

// restoreShape is a kind of buffer whose restore memory is measured.
type restoreShape struct {
	name string
	cfg  func(*replay.Config)
	n    int // experiences added
	make func(i int) replay.Experience
}

var restoreShapes = []restoreShape{
	{"small: 1 Mi one-token experiences", func(c *replay.Config) { c.Capacity = 1 << 20 }, 1 << 20,
		func(i int) replay.Experience {
			return replay.Experience{Prompt: uint64(i % 100000), Logp: []float32{-0.5}, Reward: float64(i % 2)}
		}},
	{"sparse: 10 000 experiences in a buffer of capacity 4 Mi", func(c *replay.Config) { c.Capacity = 1 << 22 }, 10000,
		func(i int) replay.Experience {
			return replay.Experience{Prompt: uint64(i % 1000), Logp: make([]float32, 64), Reward: float64(i % 2)}
		}},
	{"payload: 10 000 experiences of 512 tokens and 16 KiB payload", nil, 10000,
		func(i int) replay.Experience {
			return replay.Experience{Prompt: uint64(i % 2500), Logp: make([]float32, 512), Tokens: make([]int32, 512),
				Payload: make([]byte, 16<<10), Reward: float64(i % 2)}
		}},
}

// TestMeasureRestoreShapes saves each shape of buffer, loads it in a fresh
// child process and reports the child's peak resident memory growth during
// the load against the snapshot's size and against the restored buffer's
// live heap:
//
//	RLPOST_REPLAY_SHAPES=1 go test -run TestMeasureRestoreShapes -v ./replay
func TestMeasureRestoreShapes(t *testing.T) {
	if path := os.Getenv(restoreChildEnv); path != "" && os.Getenv(shapesEnv) == "child" {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap0, before := ms.HeapAlloc, vmHWM(t)
		b, err := replay.LoadFile(path)
		require.NoError(t, err)
		after := vmHWM(t)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		fmt.Printf("child: %d %d %d %d\n", before, after, ms.HeapAlloc-heap0, b.Len())
		return
	}
	if os.Getenv(shapesEnv) == "" {
		t.Skip("set " + shapesEnv + "=1 to measure")
	}
	for _, s := range restoreShapes {
		cfg := replay.DefaultConfig()
		if s.cfg != nil {
			s.cfg(&cfg)
		}
		b, err := replay.New(cfg)
		require.NoError(t, err)
		for i := range s.n {
			_, err := b.Add(s.make(i))
			require.NoError(t, err)
		}
		path := filepath.Join(t.TempDir(), "replay.snap")
		require.NoError(t, b.SaveFile(path))
		b = nil
		fi, err := os.Stat(path)
		require.NoError(t, err)
		cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureRestoreShapes$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), restoreChildEnv+"="+path, shapesEnv+"=child")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "child: %v\n%s", err, out)
		var before, after, live, held int64
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "child:") {
				fmt.Sscanf(line, "child: %d %d %d %d", &before, &after, &live, &held)
			}
		}
		growth := float64((after - before) * 1024)
		fmt.Printf("%-62s snapshot %6.1f MiB  live %6.1f MiB  peak growth %6.1f MiB  = %.2f× snapshot, %.2f× live\n",
			s.name, float64(fi.Size())/(1<<20), float64(live)/(1<<20), growth/(1<<20), growth/float64(fi.Size()), growth/float64(live))
	}
}
