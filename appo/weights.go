package appo

import (
	"fmt"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

// Inputs are the G responses of one group (one prompt).
type Inputs[F tensor.Float] struct {
	// Rewards are r_1..r_G, split at Config.Tau into S1 and S2 (Eq. 3);
	// the paper uses the accuracy reward alone.
	Rewards []F
	// Attention[i] is response i's token-to-frame attention Attn(o_{i,j},
	// f_t) of Eq. 4 as an [L_i, F] batch, one row per token and one column
	// per frame (FrameAttention computes it from raw attention). Values
	// are finite and ≥ 0. A response without tokens has L_i = 0 and may
	// have any number of columns, the zero Batch included.
	Attention []tensor.Batch[F]
	// Dists gives the next-token distribution of every token; Dists.Len(i)
	// must be L_i.
	Dists Distributions[F]
}

// Result describes one call, for logging. Its slices belong to the
// Weighter that returned it and are overwritten by its next call.
type Result struct {
	// Frames is ψ′, the target frames, ascending.
	Frames []int
	// HighFrames is ψS1 and LowFrames ψS2 (Eq. 8), ascending.
	HighFrames, LowFrames []int
	// High = |S1| and Low = |S2| count the responses with tokens; a
	// response without tokens is in neither set.
	High, Low int
	// GroupSize is the number of tokens in each perception group,
	// Σ_i min(K3, L_i): every response contributes its top K3 tokens to
	// every target frame's group, so all groups have this size.
	GroupSize int
	// Weighted is the number of tokens in at least one group; every other
	// token has weight 1.
	Weighted int
}

// Weights computes APPO's token weights for one group with a fresh
// Weighter; the Result's slices are the caller's to keep. A training loop
// should keep a Weighter instead, which allocates nothing once warm.
func Weights[F tensor.Float](dst []F, in Inputs[F], cfg Config) (Result, error) {
	var w Weighter[F]
	return w.Weights(dst, in, cfg)
}

// flatSpread is the spread of a group's discrepancies below which they
// count as all equal, relative to their magnitude. Identical distributions
// can give KL values that differ in the last bits (a mean of three equal
// numbers need not be that number); min-max normalising that noise would
// hand out weights between 1 and 1 + α at random.
const flatSpread = 1e-12

// Weighter computes APPO's token weights and keeps the scratch space of the
// computation between calls. The zero Weighter is ready to use. It is not
// safe for concurrent use; it spreads one call over the cores itself.
type Weighter[F tensor.Float] struct {
	// The call in progress, for the parallel passes.
	in        Inputs[F]
	entropies Entropies // in.Dists, if it gives entropies
	cfg       Config
	vocab     int
	nf        int

	nHigh, nLow int

	start  []int     // response i's tokens are flat ids start[i]..start[i+1]-1
	slot   []int     // response i's members of a group sit at slot[i]..slot[i+1]-1
	nslots int       // max_i min(K3, L_i): slot ranks in use
	focus  []float64 // Attn(o_i, f_t) of one response
	top    []int     // top-K scratch
	high   []bool    // frame in ψS1
	low    []bool    // frame in ψS2

	frames, highFrames, lowFrames []int

	toks   []int     // group k, response i, rank s: flat token id at k·N + slot[i] + s
	d      []float64 // the discrepancy of the same entry, then its normalised value
	member []int32   // per flat token: number of groups it is in
	used   []int     // grouped row u: the flat id of the u-th token in some group, ascending
	usedBy []int     // grouped row u: its response
	rowOf  []int     // per flat token in some group: its grouped row u
	rows   [][]F     // per grouped row: its distribution, during a call
	negEnt []float64 // per grouped row: Σ p log p
	errs   []error   // per grouped row: its fetch's error, or its entropy's
	bufs   [][]F     // dst rows for Dist; the first nbufs are taken this call
	nbufs  int
	mu     sync.Mutex // guards bufs and nbufs
	acc    []float64  // per flat token: sum of its normalised discrepancies

	// The slots with two members or more, for the block pass: slot q's
	// members are entries slotStart[q] … slotStart[q+1]−1 of memAt (their
	// entry in d), memRow (their grouped row) and memRows (that row).
	slotStart []int
	memAt     []int
	memRow    []int
	memRows   [][]F
	firstUse  []bool    // per member: the first of its row
	seen      []bool    // per grouped row, while building firstUse
	lonely    []int     // the grouped rows in no slot with two members or more
	parts     int       // parts of the vocabulary in the block pass
	plogpPart []float64 // part p, grouped row u: Σ p log p over the part, at p·len(used) + u
	sumPart   []float64 // the same for Σ p
	dotPart   []float64 // part p, member x: Σ p log p̄ over the part, at p·len(memAt) + x
	scratch   []*scratch[F]
	free      chan *scratch[F]
}

// scratch is one worker's share of the fetch pass.
type scratch[F tensor.Float] struct {
	spare []F // the dst row this worker offers Dist next, or nil
}

// Weights writes the APPO weight of every token into dst, response by
// response (token j of response i at dst[ΣL_{<i} + j]), and describes the
// call in the Result. Pass the weights to ppo as Inputs.TokenWeights
// (Eq. 13) through Scatter. See the package documentation for the
// equations.
//
// Every top-K breaks ties by the lower index and takes all when K exceeds
// what exists. A response without tokens takes part in no step. Weights
// reads the distributions of the tokens in some perception group only,
// each checked (finite, ≥ 0, sum within Config.SumTol of 1); it may call
// in.Dists.Dist from several goroutines at once. dst is unspecified when
// an error is returned.
func (w *Weighter[F]) Weights(dst []F, in Inputs[F], cfg Config) (Result, error) {
	defer func() { w.in, w.entropies = Inputs[F]{}, nil }() // do not keep the caller's data alive
	if err := w.prepare(dst, in, cfg); err != nil {
		return Result{}, fmt.Errorf("appo: %w", err)
	}
	w.selectFrames()
	w.buildGroups()
	if err := w.discrepancies(); err != nil {
		return Result{}, fmt.Errorf("appo: %w", err)
	}
	w.weights(dst)
	return Result{
		Frames: w.frames, HighFrames: w.highFrames, LowFrames: w.lowFrames,
		High: w.nHigh, Low: w.nLow,
		GroupSize: w.slot[len(in.Rewards)], Weighted: len(w.used),
	}, nil
}

// Scatter writes per-response token weights into dst, a [G, T] batch laid
// out like mask, ready to be ppo.Inputs.TokenWeights (Eq. 13): the weight
// of token j of response i, w[ΣL_{<i} + j] as Weights writes it, goes to
// the j-th mask-1 position of row i. Masks are general, so the tokens of a
// response need not form a prefix of its row (a multi-turn trajectory has
// observation tokens between turns). Row i of mask must have lengths[i]
// ones, the token count of response i. Mask-0 positions get 1, the
// neutral weight, so that products with other weightings stay defined.
// dst and mask may instead be packed with the same cu_seqlens
// (tensor.Packed). Scatter allocates nothing.
func Scatter[F tensor.Float](dst, mask tensor.Batch[F], w []F, lengths []int) error {
	if err := scatter(dst, mask, w, lengths); err != nil {
		return fmt.Errorf("appo: %w", err)
	}
	return nil
}

func scatter[F tensor.Float](dst, mask tensor.Batch[F], w []F, lengths []int) error {
	if err := dst.CheckLayout("dst"); err != nil {
		return err
	}
	if err := tensor.CheckLike("mask", mask, dst); err != nil {
		return err
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "mask", mask.Data); err != nil {
		return err
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "w", w); err != nil {
		return err
	}
	if len(lengths) != dst.B {
		return tensor.Errorf(tensor.ErrShape, "lengths", nil, "length %d, want one per row: %d", len(lengths), dst.B)
	}
	if err := tensor.CheckMask("mask", mask); err != nil {
		return err
	}
	total := 0
	for b, n := range lengths {
		ones := 0
		for _, m := range mask.Row(b) {
			if m == 1 {
				ones++
			}
		}
		if n != ones {
			return tensor.Errorf(tensor.ErrShape, "lengths", tensor.At(b), "%d tokens, but row %d of mask has %d ones", n, b, ones)
		}
		total += n
	}
	if len(w) != total {
		return tensor.Errorf(tensor.ErrShape, "w", nil, "length %d, want one weight per mask-1 position: %d", len(w), total)
	}
	if err := tensor.CheckFiniteVec("w", w); err != nil {
		return err
	}
	k := 0
	for i, m := range mask.Data {
		dst.Data[i] = 1
		if m == 1 {
			dst.Data[i] = w[k]
			k++
		}
	}
	return nil
}
