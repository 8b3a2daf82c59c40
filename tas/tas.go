package tas

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/enum"
	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// Curve is the weighting function over a response's relative position t̃.
type Curve int

// Shape is Curve under its old name.
//
// Deprecated: use Curve; "Shape" is tensor.Shape's name, the [B, T] of a
// batch.
type Shape = Curve

const (
	// Parabolic is TAS (AVATAR Eq. 6): w = 1 + λ·(2t̃ − 1)², largest at the
	// first and last tokens.
	Parabolic Curve = iota
	// Uniform is w = 1 on every valid token: plain GRPO credit assignment,
	// the ablation's baseline (AVATAR Table 5).
	Uniform
	// Inverse is w = 1 + λ·(1 − (2t̃ − 1)²), largest in the middle: the
	// ablation's inverse parabola (AVATAR Table 5).
	Inverse
	// LinearDecay is w = 1 + λ·(1 − t̃), largest at the first token: the
	// ablation's planning-focused "linear decay weights" (AVATAR Table 5,
	// §5.2 RQ3). The paper names the scheme without a formula; this one
	// spans the same range [1, 1 + λ] as TAS, so a comparison at equal λ
	// changes only where the weight goes.
	LinearDecay
	// LinearIncline is w = 1 + λ·t̃, largest at the last token: the
	// ablation's synthesis-focused "linear incline weights" (AVATAR
	// Table 5, §5.2 RQ3), with the same range as LinearDecay.
	LinearIncline
)

var curveNames = [...]string{"parabolic", "uniform", "inverse", "linear_decay", "linear_incline"}

func (s Curve) String() string { return enum.Name(curveNames[:], int(s), "Curve") }

// ParseCurve returns the Curve named "parabolic", "uniform", "inverse",
// "linear_decay" or "linear_incline".
func ParseCurve(s string) (Curve, error) {
	i, err := enum.Parse(curveNames[:], s, "tas", "shape")
	return Curve(i), err
}

// ParseShape is ParseCurve under its old name.
//
// Deprecated: use ParseCurve.
func ParseShape(s string) (Curve, error) { return ParseCurve(s) }

// Config configures the weights. Start from DefaultConfig: the zero value
// (λ = 0) would weigh every token 1 and silently turn TAS off, so Validate
// rejects it; to turn shaping off on purpose, set Shape: Uniform.
type Config struct {
	// Lambda is λ_TAS ≥ 0, the amplitude: weights range over [1, 1 + λ].
	// AVATAR uses 0.3, the best value of its ablation.
	Lambda float64
	// Shape is the weighting curve; Parabolic is TAS. (The field keeps
	// its name, the JSON contract's "shape"; its type is Curve.)
	Shape Curve
}

// DefaultConfig returns AVATAR's TAS: parabolic, λ = 0.3.
func DefaultConfig() Config { return Config{Lambda: 0.3, Shape: Parabolic} }

// Validate reports the first field of c that is out of its domain.
func (c Config) Validate() error {
	if c == (Config{}) {
		return tensor.Errorf(tensor.ErrRange, "Config", nil,
			"the zero value (λ = 0: every weight 1, TAS off); start from tas.DefaultConfig(), or set Shape: tas.Uniform for no shaping")
	}
	if !(c.Lambda >= 0) || math.IsInf(c.Lambda, 1) {
		return tensor.Errorf(tensor.ErrRange, "Config.Lambda", nil, "%v, want a finite number ≥ 0", c.Lambda)
	}
	if c.Shape < Parabolic || c.Shape > LinearIncline {
		return tensor.Errorf(tensor.ErrRange, "Config.Shape", nil, "%d is not a Curve", int(c.Shape))
	}
	return nil
}

// Weights writes the weight of every token into dst, which has mask's shape
// (padded [B, T], or packed with mask's cu_seqlens; see tensor.Packed).
// Positions are counted over the valid tokens of each row, so the k-th
// valid token of a row with L valid tokens has t̃ = k/(L − 1) wherever the
// mask puts it (ragged batches, prompts and observations in between). A row
// with L ≤ 1 gets weight 1 on its valid token; mask-0 positions get 0. dst
// must not overlap mask (ErrOverlap). On error the contents of dst are
// unspecified.
func Weights[F tensor.Float](dst, mask tensor.Batch[F], cfg Config) error {
	if err := check(dst, mask, cfg); err != nil {
		return err
	}
	return run(opWeights, dst, tensor.Batch[F]{}, nil, mask, cfg)
}

// ApplySequence shapes one advantage per sequence into per-token advantages
// (AVATAR: A_{i,t} = w_{i,t}·A_i): dst[b,t] = w[b,t]·adv[b], 0 at mask-0
// positions. adv has length B; the advantage of a row without valid tokens
// is not read. dst must not overlap mask or adv (ErrOverlap). On error the
// contents of dst are unspecified.
func ApplySequence[F tensor.Float](dst tensor.Batch[F], adv []F, mask tensor.Batch[F], cfg Config) error {
	if err := check(dst, mask, cfg); err != nil {
		return err
	}
	if len(adv) != mask.B {
		return fmt.Errorf("tas: %w", tensor.Errorf(tensor.ErrShape, "adv", nil, "length %d, want B = %d", len(adv), mask.B))
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "adv", adv); err != nil {
		return fmt.Errorf("tas: %w", err)
	}
	return run(opSequence, dst, tensor.Batch[F]{}, adv, mask, cfg)
}

// ApplyTokens multiplies per-token advantages by the weights:
// dst[b,t] = w[b,t]·adv[b,t], 0 at mask-0 positions, where adv is not read.
// dst may be adv itself (in place) but must not overlap it otherwise, nor
// mask (ErrOverlap). On error the contents of dst are unspecified.
func ApplyTokens[F tensor.Float](dst, adv, mask tensor.Batch[F], cfg Config) error {
	if err := check(dst, mask, cfg); err != nil {
		return err
	}
	if err := tensor.CheckLike("adv", adv, mask); err != nil {
		return fmt.Errorf("tas: %w", err)
	}
	if !tensor.Same(dst.Data, adv.Data) {
		if err := tensor.CheckDisjoint("dst", dst.Data, "adv", adv.Data); err != nil {
			return fmt.Errorf("tas: %w", err)
		}
	}
	return run(opTokens, dst, adv, nil, mask, cfg)
}

// check validates what every entry point takes: the configuration, the
// mask's storage and dst's shape. Batches may be padded [B, T] or packed
// (tensor.Packed, all with the same cu_seqlens): every op works row by row
// through Batch.Row, so a packed row gets the bits its padded twin gets.
func check[F tensor.Float](dst, mask tensor.Batch[F], cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("tas: %w", err)
	}
	if err := mask.CheckLayout("mask"); err != nil {
		return fmt.Errorf("tas: %w", err)
	}
	if err := tensor.CheckLike("dst", dst, mask); err != nil {
		return fmt.Errorf("tas: %w", err)
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "mask", mask.Data); err != nil {
		return fmt.Errorf("tas: %w", err)
	}
	return nil
}

// What a job writes.
const (
	opWeights  = iota // w
	opSequence        // w·adv[b]
	opTokens          // w·adv[b,t]
)

// Reasons a row fails; the first bad row (in row order) is reported, so
// errors do not depend on scheduling.
const (
	badNone = iota
	badMask
	badAdv
	badOverflow
)

type rowResult struct {
	bad, col int
	_        [6]int64 // keep neighbouring rows off one cache line
}

type job[F tensor.Float] struct {
	op       int
	dst, adv tensor.Batch[F]
	seqAdv   []F
	mask     tensor.Batch[F]
	cfg      Config
	rows     []rowResult
}

// jobs recycles the jobs of this package's op, one free list per storage
// type.
var jobs = parallel.Jobs{parallel.NewFree[job[float32]](4), parallel.NewFree[job[float64]](4)}

func putJob[F tensor.Float](j *job[F]) {
	rows := j.rows
	*j = job[F]{rows: rows}
	parallel.Put(jobs, j)
}

func run[F tensor.Float](op int, dst, adv tensor.Batch[F], seqAdv []F, mask tensor.Batch[F], cfg Config) error {
	B, T := mask.B, mask.T
	if B == 0 || T == 0 {
		return nil
	}
	j := parallel.Get[job[F]](jobs)
	defer putJob(j)
	j.op, j.dst, j.adv, j.seqAdv, j.mask, j.cfg = op, dst, adv, seqAdv, mask, cfg
	if cap(j.rows) < B {
		j.rows = make([]rowResult, B)
	}
	j.rows = j.rows[:B]
	parallel.Rows(j, B, T)
	for b, r := range j.rows {
		if r.bad != badNone {
			return fmt.Errorf("tas: %w", j.rowError(b, r))
		}
	}
	return nil
}

func (j *job[F]) rowError(b int, r rowResult) error {
	switch r.bad {
	case badMask:
		return tensor.Errorf(tensor.ErrMask, "mask", tensor.At(b, r.col), "%v", float64(j.mask.At(b, r.col)))
	case badAdv:
		if j.op == opSequence {
			return tensor.Errorf(tensor.ErrNonFinite, "adv", tensor.At(b), "%v", float64(j.seqAdv[b]))
		}
		return tensor.Errorf(tensor.ErrNonFinite, "adv", tensor.At(b, r.col), "%v", float64(j.adv.At(b, r.col)))
	}
	var z F
	return tensor.Errorf(tensor.ErrRange, "dst", tensor.At(b, r.col), "the shaped advantage overflows %T", z)
}

func (j *job[F]) Run(b int) {
	res := &j.rows[b]
	*res = rowResult{}
	m, dst := j.mask.Row(b), j.dst.Row(b)
	n, one := 0, bits(F(1))
	for t, v := range m {
		if bits(v) == one {
			n++
		} else if v != 0 {
			res.bad, res.col = badMask, t
			return
		}
	}
	c := j.cfg.curve(n)
	a := 1.0 // the row's advantage, for opSequence
	switch j.op {
	case opSequence:
		if n > 0 {
			if x := j.seqAdv[b]; !tensor.IsFinite(x) {
				res.bad = badAdv
				return
			}
			a = float64(j.seqAdv[b])
		}
	case opTokens:
		res.bad, res.col = tokens(c, dst, j.adv.Row(b), m)
		return
	}
	fill(c, dst, m, a)
	// |w·a| ≤ max·|a|: unless that bound overflows F, every entry is
	// finite, and the row need not be read again.
	if !tensor.IsFinite(F(c.max * a)) {
		for t, x := range dst {
			if !tensor.IsFinite(x) {
				res.bad, res.col = badOverflow, t
				return
			}
		}
	}
}

// curve is the weight function of one row: w = 1 + λ·u with
// u = s0 + s1·x² + s2·x, where x = 2t̃ − 1 = k·step − 1 for the valid token
// with index k: u = x² for the parabola, 1 − x² for the inverse,
// (1 − x)/2 = 1 − t̃ for the linear decay and (1 + x)/2 = t̃ for the
// incline. λ multiplies last so that a large λ cannot cancel the 1.
type curve struct {
	lam, s0, s1, s2, step float64
	max                   float64 // a bound on the row's weights
}

// curve returns the weights of a row with n valid tokens.
func (c Config) curve(n int) curve {
	if n <= 1 || c.Shape == Uniform {
		return curve{max: 1}
	}
	k := curve{lam: c.Lambda, step: 2 / float64(n-1), max: 1 + c.Lambda}
	switch c.Shape {
	case Inverse:
		k.s0, k.s1 = 1, -1
	case LinearDecay:
		k.s0, k.s2 = 0.5, -0.5
	case LinearIncline:
		k.s0, k.s2 = 0.5, 0.5
	default:
		k.s1 = 1
	}
	return k
}

// bits returns the bits of x, widened to 64. The row loops test the mask
// with integer compares, which leave the floating-point pipes to the
// weights.
func bits[F tensor.Float](x F) uint64 {
	if unsafe.Sizeof(x) == 4 {
		return uint64(*(*uint32)(unsafe.Pointer(&x)))
	}
	return *(*uint64)(unsafe.Pointer(&x))
}

// fill writes w·a on the valid tokens of a row and 0 elsewhere; m holds only
// 0 (or −0) and 1. The curve's fields are copied to locals: the compiler
// would otherwise copy the struct and reload them on every token.
func fill[F tensor.Float](c curve, dst, m []F, a float64) {
	dst = dst[:len(m)]
	lam, s0, s1, s2, step := c.lam, c.s0, c.s1, c.s2, c.step
	one := bits(F(1))
	k := 0.0 // the valid token's index, counted in float64 to keep integer conversions out of the loop
	for t, v := range m {
		if bits(v) != one {
			dst[t] = 0
			continue
		}
		x := k*step - 1
		dst[t] = F((1 + lam*(s0+(s1*x+s2)*x)) * a)
		k++
	}
}

// tokens writes w·adv on the valid tokens of a row and 0 elsewhere, and
// returns the kind and column of the first problem. dst may be adv.
func tokens[F tensor.Float](c curve, dst, adv, m []F) (bad, col int) {
	dst, adv = dst[:len(m)], adv[:len(m)]
	lam, s0, s1, s2, step := c.lam, c.s0, c.s1, c.s2, c.step
	k := 0.0
	for t, v := range m {
		if v == 0 {
			dst[t] = 0
			continue
		}
		a := adv[t]
		if !tensor.IsFinite(a) {
			return badAdv, t
		}
		x := k*step - 1
		dst[t] = F((1 + lam*(s0+(s1*x+s2)*x)) * float64(a))
		k++
		if !tensor.IsFinite(dst[t]) {
			return badOverflow, t
		}
	}
	return badNone, 0
}
