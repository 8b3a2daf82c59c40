package grpo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Shaping is AReaL's reward transform r' = clip((r + Bias)·Scale, −Clip, Clip).
// LLaVA-OneVision-1.5's RL write-up sets "Scale=10.0, Bias=-0.5" and writes
// r' = (r_task − 0.5)·10; it gives no clip. Start from AReaLShaping: Scale 0,
// and so the zero value, would map every reward to 0 and is an error.
type Shaping struct {
	Bias, Scale float64
	// Clip bounds the result to ±Clip; 0 means no clipping.
	Clip float64
}

// AReaLShaping returns bias −0.5 and scale 10 (the write-up's) and clip 20,
// rlpost's guard: rewards in [0, 1] shape to [−5, 5] and never reach it.
func AReaLShaping() Shaping { return Shaping{Bias: -0.5, Scale: 10, Clip: 20} }

// Validate reports the first field of s that is out of its domain.
func (s Shaping) Validate() error {
	if s.Scale == 0 {
		return tensor.Errorf(tensor.ErrRange, "Shaping.Scale", nil,
			"0 maps every reward to 0; start from grpo.AReaLShaping() (Scale: 1, Bias: 0 is the identity)")
	}
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"Bias", s.Bias}, {"Scale", s.Scale}, {"Clip", s.Clip}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return tensor.Errorf(tensor.ErrRange, "Shaping."+f.name, nil, "%v, want a finite number", f.v)
		}
	}
	if s.Clip < 0 {
		return tensor.Errorf(tensor.ErrRange, "Shaping.Clip", nil, "%v, want ≥ 0 (0: no clipping)", s.Clip)
	}
	return nil
}

// Shape is ShapeRewards under its old name.
//
// Deprecated: use ShapeRewards; "Shape" is tensor.Shape's name.
func Shape[F tensor.Float](dst, rewards []F, s Shaping) error { return ShapeRewards(dst, rewards, s) }

// ShapeRewards writes the shaped rewards into dst (same length as rewards;
// it may be rewards itself, but may not overlap it otherwise).
func ShapeRewards[F tensor.Float](dst, rewards []F, s Shaping) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if len(dst) != len(rewards) {
		return fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d", len(dst), len(rewards)))
	}
	if !tensor.Same(dst, rewards) {
		if err := tensor.CheckDisjoint("dst", dst, "rewards", rewards); err != nil {
			return fmt.Errorf("grpo: %w", err)
		}
	}
	if err := tensor.CheckFiniteVec("rewards", rewards); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	for i, r := range rewards {
		v := (float64(r) + s.Bias) * s.Scale
		if s.Clip > 0 {
			v = min(max(v, -s.Clip), s.Clip)
		}
		dst[i] = F(v)
		if !tensor.IsFinite(dst[i]) {
			return fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrRange, "dst", tensor.At(i), "%v overflows; set Shaping.Clip", v))
		}
	}
	return nil
}

// Overlong is DAPO's soft overlong punishment (DAPO Eq. 13): responses
// longer than MaxLen − Buffer lose reward linearly, up to Factor at MaxLen,
// and responses longer than MaxLen lose Factor. Start from DAPOOverlong and
// set MaxLen to the generation limit; the zero value is an error.
type Overlong struct {
	// MaxLen is L_max, the generation limit in tokens.
	MaxLen int
	// Buffer is L_cache, the length of the ramp before MaxLen.
	Buffer int
	// Factor is the full penalty, 1.0 in DAPO.
	Factor float64
}

// DAPOOverlong returns DAPO's setting (arXiv 2503.14476, §3.4 and §4.1):
// 20 480 generated tokens at most, the last 4 096 of them the punishment
// buffer, full penalty 1.
func DAPOOverlong() Overlong { return Overlong{MaxLen: 20480, Buffer: 4096, Factor: 1} }

// Validate reports the first field of o that is out of its domain.
func (o Overlong) Validate() error {
	switch {
	case o == Overlong{}:
		return tensor.Errorf(tensor.ErrRange, "Overlong", nil, "the zero value (no generation limit); start from grpo.DAPOOverlong()")
	case o.MaxLen < 1:
		return tensor.Errorf(tensor.ErrRange, "Overlong.MaxLen", nil, "%d, want ≥ 1", o.MaxLen)
	case o.Buffer < 1 || o.Buffer > o.MaxLen:
		return tensor.Errorf(tensor.ErrRange, "Overlong.Buffer", nil, "%d, want in [1, MaxLen = %d]", o.Buffer, o.MaxLen)
	case !(o.Factor >= 0) || math.IsInf(o.Factor, 1):
		return tensor.Errorf(tensor.ErrRange, "Overlong.Factor", nil, "%v, want a finite number ≥ 0", o.Factor)
	}
	return nil
}

// Penalty returns the (non-positive) reward adjustment for a response of
// length tokens: min(−(length − (MaxLen − Buffer))/Buffer·Factor, 0), and
// −Factor beyond MaxLen. o must be valid.
func (o Overlong) Penalty(length int) float64 {
	if length > o.MaxLen {
		return -o.Factor
	}
	if p := -float64(length-(o.MaxLen-o.Buffer)) / float64(o.Buffer) * o.Factor; p < 0 {
		return p
	}
	return 0 // not min(p, 0), which keeps the −0 of length = MaxLen − Buffer

}

// ApplyOverlong adds o's penalty for lengths[i] to rewards[i] in place.
func ApplyOverlong[F tensor.Float](rewards []F, lengths []int, o Overlong) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if len(lengths) != len(rewards) {
		return fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrShape, "lengths", nil, "length %d, want %d like rewards", len(lengths), len(rewards)))
	}
	if err := tensor.CheckFiniteVec("rewards", rewards); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	for i, n := range lengths {
		if n < 0 {
			return fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrRange, "lengths", tensor.At(i), "%d is negative", n))
		}
	}
	for i, n := range lengths {
		rewards[i] = F(float64(rewards[i]) + o.Penalty(n))
	}
	return nil
}

// DynamicSampling is DAPO's filter (DAPO Eq. 11): keep[k] reports whether
// group k has rewards (or any other metric) that are not all equal, or a
// single member; the others have zero advantage everywhere and are dropped
// so the batch fills with groups that teach. keep must have one entry per
// group. It returns how many groups it kept, so a trainer can over-generate
// until a batch fills.
func DynamicSampling[F tensor.Float](keep []bool, metric []F, g Groups) (int, error) {
	groups, err := g.count(len(metric))
	if err != nil {
		return 0, fmt.Errorf("grpo: %w", err)
	}
	if len(keep) != groups {
		return 0, fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrShape, "keep", nil, "length %d, want one per group (%d)", len(keep), groups))
	}
	if err := tensor.CheckFiniteVec("metric", metric); err != nil {
		return 0, fmt.Errorf("grpo: %w", err)
	}
	kept := 0
	for k := range groups {
		lo, hi, idx := g.members(k)
		size := hi - lo
		if idx != nil {
			size = len(idx)
		}
		_, _, equal := meanStd(metric, idx, lo, hi, Population)
		keep[k] = size == 1 || !equal
		if keep[k] {
			kept++
		}
	}
	return kept, nil
}

// Broadcast writes each sequence's advantage to its valid tokens:
// dst[b,t] = adv[b]·mask[b,t]. It is how outcome advantages become the
// per-token advantages of ppo.Inputs. mask and dst may be padded [B, T] or
// packed with the same cu_seqlens (tensor.Packed).
func Broadcast[F tensor.Float](dst tensor.Batch[F], adv []F, mask tensor.Batch[F]) error {
	if err := mask.CheckLayout("mask"); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if err := tensor.CheckLike("dst", dst, mask); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if len(adv) != mask.B {
		return fmt.Errorf("grpo: %w", tensor.Errorf(tensor.ErrShape, "adv", nil, "length %d, want B = %d", len(adv), mask.B))
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "mask", mask.Data); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "adv", adv); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if err := tensor.CheckMask("mask", mask); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if err := tensor.CheckFiniteVec("adv", adv); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	for b, a := range adv {
		out, m := dst.Row(b), mask.Row(b)
		for t := range out {
			out[t] = a * m[t]
		}
	}
	return nil
}
