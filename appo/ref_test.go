package appo

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

// group is one test group in the ragged [G][L_i][·] form of the conform
// contract.
type group struct {
	rewards []float64
	attn    [][][]float64 // [G][L_i][F]
	dists   [][][]float64 // [G][L_i][V]
}

// inputs converts g to the library's form with a Dense source.
func (g group) inputs(t testing.TB) Inputs[float64] {
	t.Helper()
	in := Inputs[float64]{Rewards: g.rewards, Attention: make([]tensor.Batch[float64], len(g.attn))}
	var rows [][]float64
	lengths := make([]int, len(g.dists))
	for i, a := range g.attn {
		x, err := tensor.FromRows[float64](a)
		if err != nil {
			t.Fatal(err)
		}
		in.Attention[i] = x
	}
	for i, d := range g.dists {
		lengths[i] = len(d)
		rows = append(rows, d...)
	}
	probs, err := tensor.FromRows[float64](rows)
	if err != nil {
		t.Fatal(err)
	}
	dense, err := NewDense(probs, lengths)
	if err != nil {
		t.Fatal(err)
	}
	in.Dists = dense
	return in
}

// refTopK is the specification of every top-K: sort all indices by value,
// descending, the lower index first among equals, and keep k.
func refTopK(vals []float64, k int) []int {
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return vals[idx[a]] > vals[idx[b]] })
	return idx[:min(k, len(idx))]
}

// reference computes docs/spec.md#appo the plain way: sorted top-Ks, the KL in its
// direct form Σ p·log(p/p̄) for every member, no caching, no parallelism.
// It returns the weights per response and the target frames.
func reference(g group, cfg Config) ([][]float64, []int) {
	nf := 0
	for _, a := range g.attn {
		if len(a) > 0 {
			nf = len(a[0])
		}
	}
	high, low := make([]bool, nf), make([]bool, nf)
	for i, a := range g.attn {
		if len(a) == 0 {
			continue
		}
		foc := make([]float64, nf)
		for f := range nf {
			col := make([]float64, len(a))
			for j := range a {
				col[j] = a[j][f]
			}
			top := refTopK(col, cfg.K1)
			for _, j := range top {
				foc[f] += col[j]
			}
			foc[f] /= float64(len(top))
		}
		set := low
		if g.rewards[i] >= cfg.Tau {
			set = high
		}
		for _, f := range refTopK(foc, cfg.K2) {
			set[f] = true
		}
	}
	var frames []int
	for f := range nf {
		if cfg.Strategy == Soft && high[f] || cfg.Strategy == Hard && high[f] && !low[f] || cfg.Strategy == All && (high[f] || low[f]) {
			frames = append(frames, f)
		}
	}
	acc := make([][]float64, len(g.attn))
	cnt := make([][]int, len(g.attn))
	for i, a := range g.attn {
		acc[i], cnt[i] = make([]float64, len(a)), make([]int, len(a))
	}
	type entry struct {
		i, j int
		d    float64
	}
	for _, f := range frames {
		ranks := make([][]int, len(g.attn))
		slots := 0
		for i, a := range g.attn {
			col := make([]float64, len(a))
			for j := range a {
				col[j] = a[j][f]
			}
			ranks[i] = refTopK(col, cfg.K3)
			slots = max(slots, len(ranks[i]))
		}
		var es []entry
		for s := range slots {
			var members []int
			for i := range ranks {
				if len(ranks[i]) > s {
					members = append(members, i)
				}
			}
			v := len(g.dists[members[0]][0])
			mean := make([]float64, v)
			for _, i := range members {
				for k, p := range g.dists[i][ranks[i][s]] {
					mean[k] += p / float64(len(members))
				}
			}
			for _, i := range members {
				d := 0.0
				for k, p := range g.dists[i][ranks[i][s]] {
					if p > 0 {
						d += p * math.Log(p/mean[k])
					}
				}
				es = append(es, entry{i, ranks[i][s], d})
			}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, e := range es {
			lo, hi = min(lo, e.d), max(hi, e.d)
		}
		for _, e := range es {
			n := 0.0
			if hi-lo > 1e-12*max(1, math.Abs(lo), math.Abs(hi)) {
				n = (e.d - lo) / (hi - lo)
			}
			acc[e.i][e.j] += n
			cnt[e.i][e.j]++
		}
	}
	w := make([][]float64, len(g.attn))
	for i := range w {
		w[i] = make([]float64, len(acc[i]))
		for j := range w[i] {
			w[i][j] = 1
			if cnt[i][j] > 0 {
				w[i][j] = 1 + cfg.Alpha*acc[i][j]/float64(cnt[i][j])
			}
		}
	}
	return w, frames
}

// randomGroup draws a group of the given size. Attention values are drawn
// from a few levels so that ties between tokens and frames are common;
// distributions have some exact zeros.
func randomGroup(r *rand.Rand, g, maxL, nf, v int) group {
	levels := []float64{0, 0.1, 0.25, 0.5, 0.9}
	gr := group{rewards: make([]float64, g), attn: make([][][]float64, g), dists: make([][][]float64, g)}
	for i := range g {
		gr.rewards[i] = float64(r.IntN(3)) / 2
		n := r.IntN(maxL + 1)
		gr.attn[i], gr.dists[i] = make([][]float64, n), make([][]float64, n)
		for j := range n {
			row := make([]float64, nf)
			for f := range row {
				if r.IntN(2) == 0 {
					row[f] = levels[r.IntN(len(levels))]
				} else {
					row[f] = r.Float64()
				}
			}
			gr.attn[i][j] = row
			p := make([]float64, v)
			s := 0.0
			for k := range p {
				if r.IntN(4) > 0 {
					p[k] = r.Float64()
					s += p[k]
				}
			}
			if s == 0 {
				p[r.IntN(v)], s = 1, 1
			}
			for k := range p {
				p[k] /= s
			}
			gr.dists[i][j] = p
		}
	}
	return gr
}

// flat returns ragged rows as one slice, response by response.
func flat(rows [][]float64) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// TestWeightsMatchReference compares the Weighter with the plain
// reference on random groups of every shape, reusing one Weighter across
// shapes so that stale scratch would show.
func TestWeightsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var w Weighter[float64]
	for n := range 400 {
		g := randomGroup(r, 1+r.IntN(7), 9, 1+r.IntN(6), 1+r.IntN(7))
		cfg := Config{Tau: 0.5, K1: 1 + r.IntN(10), K2: 1 + r.IntN(7), K3: 1 + r.IntN(10),
			Alpha: r.Float64() * 3, Strategy: Strategy(r.IntN(3)), SumTol: 1e-9}
		in := g.inputs(t)
		want, wantFrames := reference(g, cfg)
		dst := make([]float64, len(flat(want)))
		res, err := w.Weights(dst, in, cfg)
		if err != nil {
			t.Fatalf("case %d: %v", n, err)
		}
		if !slices.Equal(res.Frames, wantFrames) {
			t.Fatalf("case %d: frames %v, want %v", n, res.Frames, wantFrames)
		}
		for k, x := range flat(want) {
			if math.Abs(dst[k]-x) > 1e-9 {
				t.Fatalf("case %d (%+v): weight %d = %.15g, want %.15g", n, cfg, k, dst[k], x)
			}
		}
	}
}
