package bench

import (
	"bufio"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/testkit/benchdata"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
)

// crefSource is the C reference: plain fused loops, one per op, that do the
// work of the rlpost op of the same name.
//
//go:embed cref/ref.c
var crefSource []byte

// crefFlags are the flags it is built with: -O3 -march=native, OpenMP over
// rows, glibc's vectorised expf (libmvec), no fast-math.
var crefFlags = []string{"-O3", "-march=native", "-fopenmp", "-fno-math-errno"}

var crefLibs = []string{"-lmvec", "-lm"}

// CompareOps are the ops the C reference implements, in table order.
var CompareOps = []string{"policy_loss", "gae", "gae_whiten", "bilevel_gae", "group_advantages"}

// ErrNoCompiler is returned by CompareC when no C compiler is found.
var ErrNoCompiler = errors.New("no C compiler")

// Comparison is one op of a CompareC run: ns per token of rlpost and of the
// C reference in each round (the two alternate), rlpost's allocations per
// call, and the largest difference between their outputs.
type Comparison struct {
	Op             string
	Rlpost, C      []float64 // ns per token, one per round
	AllocsPerIter  float64   // rlpost, the largest over the rounds
	MaxAbsErr      float64   // over the gradient or advantages (and returns)
	LossRlpost     float64   // policy_loss only
	LossC          float64
	RatioOfMedians float64 // median(Rlpost) / median(C)
	// RatioOfBest is min(Rlpost) / min(C), the steadier figure on a
	// machine other processes load: a round slowed by them is slower, never
	// faster.
	RatioOfBest float64
}

// CompareC builds the C reference with cc (or $CC) in a temporary
// directory, writes the seeded batch of shape [b, t] to a file, and for
// each of rounds rounds measures every op in ops with rlpost and then with
// the C runner (OMP_NUM_THREADS = threads), each with two warm-up calls and
// iters timed calls, median per call. Progress goes to log.
func CompareC(ops []string, b, t, iters, rounds, threads int, log io.Writer) ([]Comparison, error) {
	for _, op := range ops {
		if !slices.Contains(CompareOps, op) {
			return nil, fmt.Errorf("bench: -compare c: op %q has no C reference (one of %s)", op, strings.Join(CompareOps, ", "))
		}
	}
	if rounds < 1 || iters < 1 || threads < 1 {
		return nil, fmt.Errorf("bench: -compare c: rounds %d, iters %d, threads %d: each must be ≥ 1", rounds, iters, threads)
	}
	dir, err := os.MkdirTemp("", "rlpost-cref-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(dir)
	bin, err := buildC(dir)
	if err != nil {
		return nil, err
	}
	d, err := benchdata.New(b, t)
	if err != nil {
		return nil, fmt.Errorf("bench: %v", err)
	}
	batch := filepath.Join(dir, "batch.bin")
	if err := writeBatch(batch, d); err != nil {
		return nil, err
	}
	res := make([]Comparison, len(ops))
	for i, op := range ops {
		res[i].Op = op
	}
	for round := range rounds {
		for i, op := range ops {
			r, err := measure(op, d, iters)
			if err != nil {
				return nil, err
			}
			out := filepath.Join(dir, op+".out")
			ns, err := runC(bin, batch, op, iters, out, threads)
			if err != nil {
				return nil, err
			}
			c := &res[i]
			c.Rlpost = append(c.Rlpost, r.NsPerToken)
			c.C = append(c.C, ns/float64(b*t))
			c.AllocsPerIter = max(c.AllocsPerIter, r.AllocsPerIter)
			fmt.Fprintf(log, "round %d %-16s rlpost %6.2f ns/token  C %6.2f ns/token\n", round+1, op, r.NsPerToken, ns/float64(b*t))
			if round == rounds-1 {
				if err := c.check(d, out); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range res {
		res[i].RatioOfMedians = Median(res[i].Rlpost) / Median(res[i].C)
		res[i].RatioOfBest = slices.Min(res[i].Rlpost) / slices.Min(res[i].C)
	}
	return res, nil
}

// measure times op on the batch d as Run does.
func measure(op string, d *benchdata.Batch, iters int) (Result, error) {
	setup, ok := setups[key{op, "cpu"}]
	if !ok {
		return Result{}, fmt.Errorf("bench: op %q not registered", op)
	}
	iter, _, err := setup(d)
	if err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", op, err)
	}
	return timeOp(op, d, iter, nil, iters)
}

// Median returns the median of x.
func Median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func buildC(dir string) (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", fmt.Errorf("bench: -compare c needs a C compiler with OpenMP and glibc's libmvec (gcc on glibc Linux): %w: %v", ErrNoCompiler, err)
	}
	src := filepath.Join(dir, "ref.c")
	if err := os.WriteFile(src, crefSource, 0o644); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	bin := filepath.Join(dir, "cref")
	flags := slices.Clone(crefFlags)
	// RLPOST_CREF_CFLAGS adds flags, e.g. -mno-avx512f to hold the
	// reference to the AVX2 instructions rlpost's kernels use.
	flags = append(flags, strings.Fields(os.Getenv("RLPOST_CREF_CFLAGS"))...)
	args := append(append(flags, src, "-o", bin), crefLibs...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: building the C reference (%s %s): %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return bin, nil
}

func runC(bin, batch, op string, iters int, out string, threads int) (float64, error) {
	cmd := exec.Command(bin, batch, op, strconv.Itoa(iters), out)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(threads), "OMP_PROC_BIND=false")
	stdout, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return 0, fmt.Errorf("bench: C reference %s: %v: %s", op, err, ee.Stderr)
		}
		return 0, fmt.Errorf("bench: C reference %s: %w", op, err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(stdout)), 64)
	if err != nil {
		return 0, fmt.Errorf("bench: C reference %s printed %q: %w", op, stdout, err)
	}
	return ns, nil
}

// writeBatch writes the layout ref.c reads: int32 B and T, then the
// float32 arrays mask, logp, old_logp, ref_logp, advantages, rewards,
// values and the turn ends of bilevel_gae, each B·T little-endian values.
func writeBatch(path string, d *benchdata.Batch) error {
	ends, err := TurnEnds(d, TurnLength)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := bufio.NewWriter(f)
	if err := binary.Write(w, binary.LittleEndian, [2]int32{int32(d.Shape.B), int32(d.Shape.T)}); err != nil {
		f.Close()
		return fmt.Errorf("bench: %w", err)
	}
	for _, x := range [][]float32{d.Mask.Data, d.Logp.Data, d.OldLogp.Data, d.RefLogp.Data, d.Advantages.Data, d.Rewards.Data, d.Values.Data, ends.Data} {
		if err := binary.Write(w, binary.LittleEndian, x); err != nil {
			f.Close()
			return fmt.Errorf("bench: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("bench: %w", err)
	}
	return f.Close()
}

// check compares the C runner's last outputs with rlpost's on the same
// batch.
func (c *Comparison) check(d *benchdata.Batch, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	n := d.Shape.Size()
	floats := func(off, k int) []float32 {
		out := make([]float32, k)
		if len(raw) >= off+4*k {
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[off+4*i:]))
			}
		}
		return out
	}
	if len(raw) < 8 {
		return fmt.Errorf("bench: C output %s: %d bytes", path, len(raw))
	}
	c.LossC = math.Float64frombits(binary.LittleEndian.Uint64(raw))
	mine, loss, err := hostOutputs(c.Op, d)
	if err != nil {
		return err
	}
	c.LossRlpost = loss
	want := 8 + 4*n*len(mine)
	if len(raw) != want {
		return fmt.Errorf("bench: C output %s: %d bytes, want %d", path, len(raw), want)
	}
	for k, x := range mine {
		y := floats(8+4*n*k, n)
		for i := range x {
			c.MaxAbsErr = max(c.MaxAbsErr, math.Abs(float64(x[i])-float64(y[i])))
		}
	}
	return nil
}

// hostOutputs runs op once through the public API and returns its arrays in
// the order ref.c writes them (and the loss of policy_loss).
func hostOutputs(op string, d *benchdata.Batch) ([][]float32, float64, error) {
	adv, ret := tensor.MustNew[float32](d.Shape.B, d.Shape.T), tensor.MustNew[float32](d.Shape.B, d.Shape.T)
	var err error
	switch op {
	case "policy_loss":
		in := ppo.Inputs[float32]{Logp: d.Logp, OldLogp: d.OldLogp, Advantages: d.Advantages, Mask: d.Mask, RefLogp: d.RefLogp}
		var res ppo.Result
		res, err = ppo.PolicyLoss(adv, in, PolicyLossConfig())
		return [][]float32{adv.Data}, res.Loss, err
	case "gae":
		err = gae.Advantages(adv, ret, d.Rewards, d.Values, d.Mask, GAEConfig())
	case "gae_whiten":
		cfg := GAEConfig()
		cfg.Whiten = true
		err = gae.Advantages(adv, ret, d.Rewards, d.Values, d.Mask, cfg)
	case "bilevel_gae":
		ends, e := TurnEnds(d, TurnLength)
		if e != nil {
			return nil, 0, e
		}
		err = gae.BiLevel(adv, ret, d.Rewards, d.Values, d.Mask, ends, BiLevelConfig())
	case "group_advantages":
		_, err = grpo.Advantages(adv.Data, d.Rewards.Data, grpo.Contiguous(GroupSize), grpo.DefaultConfig())
		return [][]float32{adv.Data}, 0, err
	default:
		return nil, 0, fmt.Errorf("bench: op %q has no C reference", op)
	}
	return [][]float32{adv.Data, ret.Data}, 0, err
}

// Threads is the default number of OpenMP threads of the C reference: the
// number of CPUs rlpost's pool uses.
func Threads() int { return runtime.GOMAXPROCS(0) }
