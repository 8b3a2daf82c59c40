package appo

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlpost/rlpost/tensor"
)

// lazy is a Distributions that copies each row into dst, the way a source
// computing softmaxes on demand works, and counts the calls.
type lazy struct {
	d     *Dense[float64]
	calls atomic.Int64
	// bad, when set, replaces the answer for one token.
	bad func(i, j int, dst []float64) ([]float64, error)
}

func (l *lazy) Vocab() int    { return l.d.Vocab() }
func (l *lazy) Len(i int) int { return l.d.Len(i) }
func (l *lazy) Dist(dst []float64, i, j int) ([]float64, error) {
	l.calls.Add(1)
	if l.bad != nil {
		if p, err := l.bad(i, j, dst); p != nil || err != nil {
			return p, err
		}
	}
	row, err := l.d.Dist(nil, i, j)
	if err != nil {
		return nil, err
	}
	return dst[:copy(dst, row)], nil
}

// errGroup is a valid group with every token in the single frame's group
// (K3 covers all), so that a bad distribution anywhere is read.
func errGroup() group {
	return group{
		rewards: []float64{1, 0},
		attn:    [][][]float64{{{0.9, 0.1}, {0.5, 0.2}}, {{0.3, 0.4}, {0.2, 0.6}, {0.1, 0.1}}},
		dists: [][][]float64{
			{slices.Clone(sure), slices.Clone(half)},
			{slices.Clone(half), slices.Clone(other), {0.25, 0.75}},
		},
	}
}

func TestWeightsErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config)
		kind   error
		substr string
	}{
		{"no responses", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Rewards, in.Attention = nil, nil
		}, tensor.ErrEmpty, "rewards"},
		{"NaN reward", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Rewards[1] = math.NaN()
		}, tensor.ErrNonFinite, "rewards[1]"},
		{"attention for fewer responses", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Attention = in.Attention[:1]
		}, tensor.ErrShape, "attention: shape mismatch: 1 responses, want one per reward: 2"},
		{"ragged attention: rows do not match the response length", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			a := in.Attention[1]
			in.Attention[1] = tensor.Batch[float64]{Shape: tensor.Shape{B: 2, T: 2}, Data: a.Data[:4]}
		}, tensor.ErrShape, "attention[1]: shape mismatch: 2 tokens (rows), but Dists.Len(1) = 3"},
		{"frames differ between responses", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Attention[1] = tensor.Batch[float64]{Shape: tensor.Shape{B: 3, T: 1}, Data: []float64{1, 2, 3}}
		}, tensor.ErrShape, "attention[1]: shape mismatch: 1 frames (columns), want 2 like attention[0]"},
		{"malformed attention batch", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Attention[0].Data = in.Attention[0].Data[:3]
		}, tensor.ErrShape, "attention[0]"},
		{"negative attention", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Attention[1].Set(2, 1, -0.25)
		}, tensor.ErrRange, "attention[1,2,1]: out of range: -0.25 is negative"},
		{"NaN attention", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Attention[0].Set(1, 0, math.NaN())
		}, tensor.ErrNonFinite, "attention[0,1,0]: not finite: NaN"},
		{"infinite attention", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Attention[0].Set(0, 1, math.Inf(1))
		}, tensor.ErrNonFinite, "attention[0,0,1]"},
		{"no distributions", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Dists = nil
		}, tensor.ErrEmpty, "dists"},
		{"distribution does not sum to 1", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			g.dists[1][2][1] = 0.7
			*in = g.inputs(t)
		}, tensor.ErrRange, "dists[1,2]: out of range: probabilities sum to 0.95, want 1 within Config.SumTol = 0.001"},
		{"sum off by less than the tolerance is accepted", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			g.dists[1][2][1] = 0.7505
			*in = g.inputs(t)
		}, nil, ""},
		{"tighter tolerance rejects it", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			g.dists[1][2][1] = 0.7505
			*in = g.inputs(t)
			cfg.SumTol = 1e-4
		}, tensor.ErrRange, "dists[1,2]: out of range: probabilities sum to 1.0005"},
		{"negative probability", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			g.dists[0][1] = []float64{1.5, -0.5}
			*in = g.inputs(t)
		}, tensor.ErrRange, "dists[0,1,1]: out of range: probability -0.5 is negative"},
		{"NaN probability", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			g.dists[1][0][0] = math.NaN()
			*in = g.inputs(t)
		}, tensor.ErrNonFinite, "dists[1,0,0]: not finite: NaN"},
		{"source returns a short row", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Dists = &lazy{d: in.Dists.(*Dense[float64]), bad: func(i, j int, dst []float64) ([]float64, error) {
				if i == 1 && j == 1 {
					return dst[:1], nil
				}
				return nil, nil
			}}
		}, tensor.ErrShape, "dists[1,1]: shape mismatch: length 1, want V = 2"},
		{"source fails", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			in.Dists = &lazy{d: in.Dists.(*Dense[float64]), bad: func(i, j int, dst []float64) ([]float64, error) {
				if i == 0 && j == 1 {
					return nil, errSource
				}
				return nil, nil
			}}
		}, errSource, "Dists.Dist(0, 1): logits evicted"},
		{"dst too short", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			*dst = (*dst)[:4]
		}, tensor.ErrShape, "dst: shape mismatch: length 4, want one weight per token: 5"},
		{"bad config", func(g *group, in *Inputs[float64], dst *[]float64, cfg *Config) {
			cfg.K3 = 0
		}, tensor.ErrRange, "Config.K3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := errGroup()
			in := g.inputs(t)
			dst := make([]float64, 5)
			cfg := DefaultConfig()
			c.edit(&g, &in, &dst, &cfg)
			_, err := Weights(dst, in, cfg)
			if c.kind == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.substr) || !strings.HasPrefix(err.Error(), "appo: ") {
				t.Errorf("error %q, want it to start with \"appo: \" and contain %q", err, c.substr)
			}
		})
	}
}

var errSource = errors.New("logits evicted")

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		edit  func(*Config)
	}{
		{"Config.Tau", func(c *Config) { c.Tau = math.NaN() }},
		{"Config.Tau", func(c *Config) { c.Tau = math.Inf(1) }},
		{"Config.K1", func(c *Config) { c.K1 = 0 }},
		{"Config.K2", func(c *Config) { c.K2 = -1 }},
		{"Config.K3", func(c *Config) { c.K3 = 0 }},
		{"Config.Alpha", func(c *Config) { c.Alpha = -0.1 }},
		{"Config.Alpha", func(c *Config) { c.Alpha = math.Inf(1) }},
		{"Config.Strategy", func(c *Config) { c.Strategy = 3 }},
		{"Config.SumTol", func(c *Config) { c.SumTol = math.NaN() }},
		{"Config.SumTol", func(c *Config) { c.SumTol = -1 }},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, tensor.ErrRange) || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("%+v: error %v, want an ErrRange naming %s", cfg, err, c.field)
		}
	}
	cfg := DefaultConfig()
	cfg.SumTol = math.Inf(1)
	if err := cfg.Validate(); err != nil {
		t.Errorf("SumTol = +Inf (check off): %v", err)
	}
}

func TestParseStrategy(t *testing.T) {
	for _, s := range []Strategy{Soft, Hard, All} {
		got, err := ParseStrategy(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStrategy(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseStrategy("Soft"); err == nil {
		t.Error("ParseStrategy is case-sensitive, like the JSON contract")
	}
	if s := Strategy(7).String(); s != "Strategy(7)" {
		t.Errorf("Strategy(7).String() = %q", s)
	}
}

func TestNewDenseErrors(t *testing.T) {
	probs := tensor.MustNew[float64](5, 2)
	for _, c := range []struct {
		lengths []int
		kind    error
		substr  string
	}{
		{[]int{2, 3}, nil, ""},
		{[]int{2, 2}, tensor.ErrShape, "probs: shape mismatch: 5 rows, want one per token: Σ lengths = 4"},
		{[]int{4, 3}, tensor.ErrShape, "Σ lengths = 7"},
		{[]int{6, -1}, tensor.ErrRange, "lengths[1]"},
		{[]int{2, -3, 6}, tensor.ErrRange, "lengths[1]: out of range: -3 is negative"},
		{[]int{math.MaxInt, math.MaxInt}, tensor.ErrShape, "probs"},
	} {
		d, err := NewDense(probs, c.lengths)
		if c.kind == nil {
			if err != nil || d.Len(1) != 3 || d.Len(2) != 0 || d.Len(-1) != 0 || d.Vocab() != 2 {
				t.Errorf("lengths %v: %v", c.lengths, err)
			}
			if _, err := d.Dist(nil, 1, 3); !errors.Is(err, tensor.ErrRange) {
				t.Errorf("Dist past the end: %v, want ErrRange", err)
			}
			continue
		}
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("lengths %v: error %v, want %v containing %q", c.lengths, err, c.kind, c.substr)
		}
	}
	if _, err := NewDense(tensor.Batch[float64]{Shape: tensor.Shape{B: 2, T: 2}}, []int{2}); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("malformed probs: %v", err)
	}
}

func TestDenseCheck(t *testing.T) {
	g := errGroup()
	g.dists[1][1] = []float64{0.5, 0.6}
	d := g.inputs(t).Dists.(*Dense[float64])
	if err := d.Check(1e-3); !errors.Is(err, tensor.ErrRange) || !strings.Contains(err.Error(), "dists[1,1]") {
		t.Errorf("Check: %v, want the bad sum of token (1, 1)", err)
	}
	if err := d.Check(0.2); err != nil {
		t.Errorf("Check with a loose tolerance: %v", err)
	}
}

// TestLazySource checks that a source which fills dst gives the Dense
// answer and is asked only for the distributions of grouped tokens, each
// once however many group slots it fills (TestEachDistributionFetchedOnce
// checks this token by token on random groups).
func TestLazySource(t *testing.T) {
	g := group{
		rewards: []float64{1, 0, 1},
		attn: [][][]float64{
			{{0.9, 0.1, 0}, {0.1, 0.2, 0}, {0.3, 0.1, 0}},
			{{0.2, 0.2, 0.9}, {0.1, 0.8, 0.1}},
			{{0.4, 0.6, 0}, {0.5, 0.3, 0}},
		},
		dists: [][][]float64{
			{sure, half, {0.2, 0.8}},
			{other, {0.3, 0.7}},
			{half, {0.9, 0.1}},
		},
	}
	cfg := DefaultConfig()
	cfg.K1, cfg.K2, cfg.K3 = 1, 1, 1
	dense := g.inputs(t)
	want := make([]float64, 7)
	res, err := Weights(want, dense, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := &lazy{d: dense.Dists.(*Dense[float64])}
	in := dense
	in.Dists = src
	got := make([]float64, 7)
	var w Weighter[float64]
	res2, err := w.Weights(got, in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("lazy source: %v, dense: %v", got, want)
		}
	}
	// Frames {0, 1} (responses 0 and 2 look at 0 and 1), one token of
	// each of the 3 responses per group.
	if wantCalls := int64(res.Weighted); src.calls.Load() != wantCalls {
		t.Errorf("%d calls to Dist, want one per grouped token: %d", src.calls.Load(), wantCalls)
	}
	if len(res2.Frames) != 2 || res2.GroupSize != 3 {
		t.Errorf("frames %v, group size %d, want 2 frames of 3", res2.Frames, res2.GroupSize)
	}
}

func TestScatter(t *testing.T) {
	// Row 0 has a non-prefix mask (an observation token at t = 1), row 1
	// has two tokens, row 2 none.
	mask := tensor.Batch[float32]{Shape: tensor.Shape{B: 3, T: 4}, Data: []float32{
		1, 0, 1, 1,
		1, 1, 0, 0,
		0, 0, 0, 0,
	}}
	w := []float32{2, 3, 4, 5, 6}
	dst := tensor.MustNew[float32](3, 4)
	if err := Scatter(dst, mask, w, []int{3, 2, 0}); err != nil {
		t.Fatal(err)
	}
	want := []float32{2, 1, 3, 4, 5, 6, 1, 1, 1, 1, 1, 1}
	for k := range want {
		if dst.Data[k] != want[k] {
			t.Fatalf("Scatter = %v, want %v", dst.Data, want)
		}
	}
	for _, c := range []struct {
		name    string
		dst     tensor.Batch[float32]
		mask    tensor.Batch[float32]
		w       []float32
		lengths []int
		kind    error
		substr  string
	}{
		{"mask shape", dst, tensor.MustNew[float32](3, 3), w, []int{3, 2, 0}, tensor.ErrShape, "mask"},
		{"lengths count", dst, mask, w, []int{3, 2}, tensor.ErrShape, "lengths: shape mismatch: length 2, want one per row: 3"},
		{"row length", dst, mask, w, []int{2, 3, 0}, tensor.ErrShape, "lengths[0]: shape mismatch: 2 tokens, but row 0 of mask has 3 ones"},
		{"weights count", dst, mask, w[:4], []int{3, 2, 0}, tensor.ErrShape, "w: shape mismatch: length 4"},
		{"mask value", dst, tensor.Batch[float32]{Shape: mask.Shape, Data: []float32{1, 0, 1, 1, 1, 0.5, 0, 0, 0, 0, 0, 0}}, w, []int{3, 2, 0}, tensor.ErrMask, "mask[1,1]"},
		{"NaN weight", dst, mask, []float32{2, 3, float32(math.NaN()), 5, 6}, []int{3, 2, 0}, tensor.ErrNonFinite, "w[2]"},
		{"malformed dst", tensor.Batch[float32]{Shape: tensor.Shape{B: 3, T: 4}}, mask, w, []int{3, 2, 0}, tensor.ErrShape, "dst"},
	} {
		err := Scatter(c.dst, c.mask, c.w, c.lengths)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: error %v, want %v containing %q", c.name, err, c.kind, c.substr)
		}
	}
}

func TestAlphaOverflowsFloat32(t *testing.T) {
	in := Inputs[float32]{
		Rewards:   []float32{1},
		Attention: []tensor.Batch[float32]{{Shape: tensor.Shape{B: 1, T: 1}, Data: []float32{1}}},
	}
	d, err := NewDense(tensor.Batch[float32]{Shape: tensor.Shape{B: 1, T: 1}, Data: []float32{1}}, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	in.Dists = d
	cfg := DefaultConfig()
	cfg.Alpha = 1e39 // finite in float64, but 1 + α is +Inf in float32
	_, err = Weights(make([]float32, 1), in, cfg)
	if !errors.Is(err, tensor.ErrRange) || !strings.Contains(err.Error(), "Config.Alpha") {
		t.Errorf("error %v, want an ErrRange naming Config.Alpha", err)
	}
}
