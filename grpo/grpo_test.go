package grpo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/grpo"
	"github.com/rlpost/rlpost/internal/tool/conform"
	"github.com/rlpost/rlpost/internal/tool/golden"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/require"
)

func TestAdvantagesGolden(t *testing.T) {
	for _, c := range golden.Load(t, "group_advantages") {
		t.Run(fmt.Sprint("line", c.Line), func(t *testing.T) {
			rewards, groups, cfg, err := conform.DecodeGroupAdvantages(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			var want struct {
				Advantages []float64 `json:"advantages"`
			}
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			got := make([]float64, len(rewards))
			if _, err := grpo.Advantages(got, rewards, groups, cfg); err != nil {
				t.Fatal(err)
			}
			golden.CheckVec(t, "float64", got, want.Advantages)
			r32 := make([]float32, len(rewards))
			for i, r := range rewards {
				r32[i] = float32(r)
			}
			got32 := make([]float32, len(rewards))
			if _, err := grpo.Advantages(got32, r32, groups, cfg); err != nil {
				t.Fatal(err)
			}
			for i := range got32 {
				// float32 rewards carry ~1e-7 relative error into R − mean.
				if !golden.Close(float64(got32[i]), want.Advantages[i]) && math.Abs(float64(got32[i])-want.Advantages[i]) > 1e-5 {
					t.Fatalf("float32[%d] = %v, want %v", i, got32[i], want.Advantages[i])
				}
			}
		})
	}
}

// TestAdvantagesByHand checks each estimator on numbers worked out by hand.
func TestAdvantagesByHand(t *testing.T) {
	// One group: rewards 1, 0, 0, 1, mean 0.5, unbiased std 1/√3.
	r := []float64{1, 0, 0, 1}
	s := 1 / math.Sqrt(3)
	cases := []struct {
		name string
		cfg  grpo.Config
		want []float64
	}{
		{"grpo", grpo.Config{Eps: 0}, []float64{0.5 / s, -0.5 / s, -0.5 / s, 0.5 / s}},
		{"grpo population", grpo.Config{Std: grpo.Population, Eps: 1e-6}, []float64{0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), 0.5 / (0.5 + 1e-6)}},
		{"dr grpo", grpo.Config{Scale: grpo.ScaleNone}, []float64{0.5, -0.5, -0.5, 0.5}},
		// RLOO: 1 − mean(0, 0, 1) = 2/3; 0 − mean(1, 0, 1) = −2/3.
		{"rloo", grpo.Config{Estimator: grpo.RLOO, Scale: grpo.ScaleNone}, []float64{2.0 / 3, -2.0 / 3, -2.0 / 3, 2.0 / 3}},
	}
	for _, c := range cases {
		got := make([]float64, 4)
		if _, err := grpo.Advantages(got, r, grpo.Contiguous(4), c.cfg); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("%s: A[%d] = %v, want %v", c.name, i, got[i], c.want[i])
			}
		}
	}
	// Batch scaling divides every group by the std of all rewards.
	rb := []float64{0, 2, 10, 10}
	got := make([]float64, 4)
	if _, err := grpo.Advantages(got, rb, grpo.Contiguous(2), grpo.Config{Scale: grpo.ScaleBatch, Eps: 1e-6}); err != nil {
		t.Fatal(err)
	}
	// mean 5.5, unbiased var = (30.25 + 12.25 + 20.25·2)/3 = 83/3.
	sd := math.Sqrt(83.0/3) + 1e-6
	want := []float64{-1 / sd, 1 / sd, 0, 0}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("batch: A[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestVanishingAndSingletons(t *testing.T) {
	// Groups by id: {0: 0.1 0.1 0.1} vanishes, {7: 1} is a singleton,
	// {3: 0 1} teaches.
	r := []float64{0.1, 0, 0.1, 1, 1, 0.1}
	ids := []int{0, 3, 0, 7, 3, 0}
	g, err := grpo.ByID(ids)
	if err != nil {
		t.Fatal(err)
	}
	adv := make([]float64, len(r))
	st, err := grpo.Advantages(adv, r, g, grpo.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if st.Groups != 3 || st.Vanishing != 1 || st.Singletons != 1 || math.Abs(st.VanishingFrac-1.0/3) > 1e-15 {
		t.Errorf("stats %+v", st)
	}
	for _, i := range []int{0, 2, 3, 5} {
		if adv[i] != 0 {
			t.Errorf("A[%d] = %v, want exactly 0 (vanished group or singleton)", i, adv[i])
		}
	}
	if !(adv[1] < 0 && adv[4] > 0 && adv[1] == -adv[4]) {
		t.Errorf("group 3 advantages %v, %v", adv[1], adv[4])
	}
	keep := make([]bool, 3)
	kept, err := grpo.DynamicSampling(keep, r, g)
	if err != nil || kept != 2 || fmt.Sprint(keep) != "[false true true]" {
		t.Errorf("DynamicSampling = %v %d %v (groups ordered by id 0, 3, 7)", keep, kept, err)
	}
}

func TestAdvantagesRejectBadInput(t *testing.T) {
	r := []float64{1, 2, 3, 4, 5, 6}
	cases := []struct {
		name   string
		dst    []float64
		r      []float64
		g      grpo.Groups
		cfg    grpo.Config
		kind   error
		substr string
	}{
		{"size does not divide", make([]float64, 6), r, grpo.Contiguous(4), grpo.DefaultConfig(), tensor.ErrShape, "group_size"},
		{"size 0", make([]float64, 6), r, grpo.Contiguous(0), grpo.DefaultConfig(), tensor.ErrRange, "group_size"},
		{"NaN reward", make([]float64, 3), []float64{1, math.NaN(), 2}, grpo.Contiguous(3), grpo.DefaultConfig(), tensor.ErrNonFinite, "rewards[1]"},
		{"empty", []float64{}, []float64{}, grpo.Contiguous(2), grpo.DefaultConfig(), tensor.ErrEmpty, "rewards"},
		{"dst short", make([]float64, 5), r, grpo.Contiguous(2), grpo.DefaultConfig(), tensor.ErrShape, "dst"},
		{"negative eps", make([]float64, 6), r, grpo.Contiguous(2), grpo.Config{Eps: -1}, tensor.ErrRange, "Config.Eps"},
		{"bad scale", make([]float64, 6), r, grpo.Contiguous(2), grpo.Config{Scale: 5}, tensor.ErrRange, "Config.Scale"},
	}
	for _, c := range cases {
		_, err := grpo.Advantages(c.dst, c.r, c.g, c.cfg)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.kind, c.substr)
		}
	}
	g, _ := grpo.ByID([]int{1, 1, 2})
	if _, err := grpo.Advantages(make([]float64, 6), r, g, grpo.DefaultConfig()); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("ids covering 3 of 6 rewards: %v", err)
	}
	if _, err := grpo.ByID(nil); !errors.Is(err, tensor.ErrEmpty) {
		t.Errorf("ByID(nil): %v", err)
	}
}

func TestShaping(t *testing.T) {
	r := []float64{0, 1, 0.5, 3}
	if err := grpo.ShapeRewards(r, r, grpo.AReaLShaping()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r) != "[-5 5 0 20]" {
		t.Errorf("AReaL shaping = %v, want [-5 5 0 20] (clipped at 20)", r)
	}
	if err := grpo.ShapeRewards(r, r, grpo.Shaping{Scale: math.NaN()}); !errors.Is(err, tensor.ErrRange) {
		t.Errorf("NaN scale: %v", err)
	}
	o := grpo.Overlong{MaxLen: 100, Buffer: 20, Factor: 1}
	for _, c := range []struct {
		n    int
		want float64
	}{{50, 0}, {80, 0}, {90, -0.5}, {100, -1}, {101, -1}} {
		if got := o.Penalty(c.n); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Penalty(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	rw := []float32{1, 1, 1}
	if err := grpo.ApplyOverlong(rw, []int{10, 90, 200}, o); err != nil || fmt.Sprint(rw) != "[1 0.5 0]" {
		t.Errorf("ApplyOverlong = %v %v", rw, err)
	}
	if err := grpo.ApplyOverlong(rw, []int{1, -1, 2}, o); !errors.Is(err, tensor.ErrRange) || !strings.Contains(err.Error(), "lengths[1]") {
		t.Errorf("negative length: %v", err)
	}
	if err := grpo.ApplyOverlong(rw, []int{1, 2, 3}, grpo.Overlong{MaxLen: 10, Buffer: 20}); !errors.Is(err, tensor.ErrRange) {
		t.Errorf("buffer > max: %v", err)
	}
}

func TestBroadcast(t *testing.T) {
	mask, _ := tensor.FromRows[float32]([][]float64{{1, 1, 0}, {0, 1, 1}})
	dst := tensor.MustNew[float32](2, 3)
	if err := grpo.Broadcast(dst, []float32{2, -1}, mask); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dst.Data) != "[2 2 0 -0 -1 -1]" && fmt.Sprint(dst.Data) != "[2 2 0 0 -1 -1]" {
		t.Errorf("Broadcast = %v", dst.Data)
	}
	if err := grpo.Broadcast(dst, []float32{1}, mask); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("short adv: %v", err)
	}
}

func TestPresetsAreValid(t *testing.T) {
	for name, c := range map[string]ppo.Config{"grpo": grpo.GRPOLoss(), "dr": grpo.DrGRPOLoss(512), "dapo": grpo.DAPOLoss(), "areal": grpo.DecoupledLoss()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c := grpo.DAPOLoss(); c.ClipLow != 0.2 || c.ClipHigh != 0.28 || c.KLCoef != 0 || c.Mode != ppo.TokenMean {
		t.Errorf("DAPO preset %+v", c)
	}
	if c := grpo.GRPOLoss(); c.KLCoef != 0.04 || c.ClipHigh != 0.2 || c.KLEstimator != ppo.K3 {
		t.Errorf("GRPO preset %+v", c)
	}
	if c := grpo.DecoupledLoss(); c.BehaveCap != 5 || c.BehaveCapMode != ppo.CapTruncate || c.ClipHigh != 0.28 {
		t.Errorf("AReaL preset %+v", c)
	}
}

// FuzzAdvantages: arbitrary rewards and groupings return an error or finite
// advantages, never a panic.
func FuzzAdvantages(f *testing.F) {
	f.Add([]byte{4, 0, 1, 2, 3, 4, 5, 6, 7}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		if len(data) == 0 {
			return
		}
		size := int(int8(data[0]))
		data = data[1:]
		r := make([]float32, len(data)/2)
		ids := make([]int, len(r))
		for i := range r {
			r[i] = float32(int8(data[2*i])) / 4
			if data[2*i] == 0x7f {
				r[i] = float32(math.Inf(1))
			}
			ids[i] = int(data[2*i+1] % 5)
		}
		cfg := grpo.Config{Estimator: grpo.Estimator(mode % 3), Scale: grpo.Scale(mode / 3 % 4), Std: grpo.Std(mode / 12 % 3), Eps: float64(mode%5) * 1e-7}
		g := grpo.Contiguous(size)
		if mode&0x80 != 0 {
			var err error
			if g, err = grpo.ByID(ids); err != nil {
				return
			}
		}
		adv := make([]float32, len(r))
		if _, err := grpo.Advantages(adv, r, g, cfg); err != nil {
			return
		}
		for i, a := range adv {
			if !tensor.IsFinite(a) {
				t.Fatalf("A[%d] = %v without an error", i, a)
			}
		}
	})
}

// TestAdvantagesAllocateNothing: the training-loop call allocates nothing,
// for contiguous groups and for groups by id.
func TestAdvantagesAllocateNothing(t *testing.T) {
	r := make([]float32, 4096)
	ids := make([]int, len(r))
	for i := range r {
		r[i] = float32(i % 7)
		ids[i] = (i * 31) % 64
	}
	adv := make([]float32, len(r))
	byID, err := grpo.ByID(ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []grpo.Groups{grpo.Contiguous(16), byID} {
		if n := testing.AllocsPerRun(20, func() {
			if _, err := grpo.Advantages(adv, r, g, grpo.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%v allocations per call", n)
		}
	}
}

// TestAdvantagesParallelMatchesGroupByGroup: a batch large enough for the
// row engine gives each group what the group alone gives, and the counts
// do not depend on the split.
func TestAdvantagesParallelMatchesGroupByGroup(t *testing.T) {
	const size, groups = 16, 4096
	r := make([]float32, size*groups)
	for i := range r {
		r[i] = float32((i*7919)%23) / 7
	}
	for k := 0; k < groups; k += 5 { // some vanishing groups
		for i := range size {
			r[k*size+i] = 1
		}
	}
	all := make([]float32, len(r))
	st, err := grpo.Advantages(all, r, grpo.Contiguous(size), grpo.DefaultConfig())
	require.NoError(t, err)
	vanishing := 0
	for k := range groups {
		one := make([]float32, size)
		s1, err := grpo.Advantages(one, r[k*size:(k+1)*size], grpo.Contiguous(size), grpo.DefaultConfig())
		require.NoError(t, err)
		vanishing += s1.Vanishing
		require.Equal(t, one, all[k*size:(k+1)*size], "group %d", k)
	}
	require.Equal(t, vanishing, st.Vanishing)
	require.Equal(t, groups, st.Groups)
}

// TestAdvantagesNamesFirstOverflow: with several groups overflowing, the
// error names the first in order, however the groups were split.
func TestAdvantagesNamesFirstOverflow(t *testing.T) {
	const size, groups = 2, 8192
	r := make([]float32, size*groups)
	for i := range r {
		r[i] = float32(i % 2)
	}
	for _, k := range []int{8000, 3001, 6000} {
		// RLOO doubles R − mean in a group of two: past float32's range.
		r[2*k], r[2*k+1] = -3e38, 3e38
	}
	cfg := grpo.DefaultConfig()
	cfg.Estimator, cfg.Scale = grpo.RLOO, grpo.ScaleNone
	_, err := grpo.Advantages(make([]float32, len(r)), r, grpo.Contiguous(size), cfg)
	require.ErrorIs(t, err, tensor.ErrRange)
	require.ErrorContains(t, err, "[6002]")
}

// TestAdvantagesMomentsBesideGroups: the batch moments taken beside the
// groups (dst apart from rewards) are the bits taken before them (dst is
// rewards itself), and so are the advantages.
func TestAdvantagesMomentsBesideGroups(t *testing.T) {
	r := make([]float32, 16*4096)
	for i := range r {
		r[i] = float32((i*7919)%101) / 13
	}
	apart := make([]float32, len(r))
	st1, err := grpo.Advantages(apart, r, grpo.Contiguous(16), grpo.DefaultConfig())
	require.NoError(t, err)
	inPlace := append([]float32(nil), r...)
	st2, err := grpo.Advantages(inPlace, inPlace, grpo.Contiguous(16), grpo.DefaultConfig())
	require.NoError(t, err)
	require.Equal(t, st2, st1)
	require.Equal(t, inPlace, apart)

	r[777] = float32(math.NaN())
	_, err = grpo.Advantages(apart, r, grpo.Contiguous(16), grpo.DefaultConfig())
	require.ErrorIs(t, err, tensor.ErrNonFinite)
	require.ErrorContains(t, err, "[777]")
}

// TestContiguousMatchesByIDBitForBit: contiguous groups, which the engine
// takes four at a time, give the bits of the same groups given by id (one
// at a time, through another loop), in both storages and every
// configuration, with vanishing groups, groups of ±0 and a ragged tail.
func TestContiguousMatchesByIDBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{2, 3, 16, 17} {
		for _, groups := range []int{1, 4, 7, 1030} {
			n := size * groups
			r64 := make([]float64, n)
			for i := range r64 {
				r64[i] = math.Round(rng.NormFloat64()*8) / 4
			}
			for k := 0; k < groups; k += 3 { // equal members
				for i := range size {
					r64[k*size+i] = float64(k%5) - 2
				}
			}
			if groups > 5 { // +0 and −0, equal as numbers
				for i := range size {
					r64[5*size+i] = math.Copysign(0, float64(i%2)-0.5)
				}
			}
			ids := make([]int, n)
			for i := range ids {
				ids[i] = i / size
			}
			byID, err := grpo.ByID(ids)
			require.NoError(t, err)
			for _, cfg := range []grpo.Config{
				grpo.DefaultConfig(),
				{Estimator: grpo.RLOO, Scale: grpo.ScaleBatch, Std: grpo.Population, Eps: 1e-6},
				{Scale: grpo.ScaleNone},
				{Std: grpo.Population},
			} {
				checkBits(t, r64, size, byID, cfg)
				r32 := make([]float32, n)
				for i, v := range r64 {
					r32[i] = float32(v)
				}
				checkBits(t, r32, size, byID, cfg)
			}
		}
	}
}

func checkBits[F tensor.Float](t *testing.T, r []F, size int, byID grpo.Groups, cfg grpo.Config) {
	t.Helper()
	a, b := make([]F, len(r)), make([]F, len(r))
	s1, err := grpo.Advantages(a, r, grpo.Contiguous(size), cfg)
	require.NoError(t, err)
	s2, err := grpo.Advantages(b, r, byID, cfg)
	require.NoError(t, err)
	require.Equal(t, s2, s1, "size %d, %d rewards, %+v", size, len(r), cfg)
	for i := range a {
		if math.Float64bits(float64(a[i])) != math.Float64bits(float64(b[i])) {
			t.Fatalf("size %d, %d rewards, %+v: [%d] contiguous %v, by id %v", size, len(r), cfg, i, a[i], b[i])
		}
	}
}
