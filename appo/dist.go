package appo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Distributions gives the policy's next-token probability distributions on
// demand. A group holds G·L of them, each of vocabulary size V — 8 × 512 ×
// 32 000 floats is half a gigabyte in float32 — and APPO reads only those of
// the tokens that land in a perception group, so the algorithm asks for
// them one at a time instead of taking a G×L×V array. A trainer can back
// it with its logits and compute each softmax when asked, or with top-k
// logits spread over a V-sized row.
//
// Weights asks for the distribution of each token in a perception group
// exactly once, and for no other, and uses every row it fetched until it
// returns: a source answers each request either in dst, a fresh scratch
// row the Weighter keeps (V floats per grouped token, reused by the next
// call), or with a row of its own that stays unchanged until Weights
// returns. Dist may be called from several goroutines at once (like
// io.ReaderAt).
type Distributions[F tensor.Float] interface {
	// Vocab returns V, the length of every distribution.
	Vocab() int
	// Len returns the number of tokens of response i.
	Len(i int) int
	// Dist returns p_{i,j}, the distribution of the token that follows
	// token j of response i (0 ≤ j < Len(i)), as V probabilities. The
	// source may fill dst, a scratch row of length V owned by the caller,
	// and return it, or return a row of its own that stays unchanged until
	// the call of Weights that asked for it returns.
	Dist(dst []F, i, j int) ([]F, error)
}

// Entropies is an optional interface of a Distributions source that knows
// the entropy of each distribution, as trainers that log the policy's
// entropy compute it from the logits anyway. The KL of a token to a slot
// mean is −H(p) − Σ p log p̄, and H(p) is otherwise a logarithm per
// vocabulary entry of every grouped token — three quarters of the
// logarithms at the paper's sizes. Entropy(i, j) must be
// −Σ_v p_v·log p_v (natural log, 0·log 0 = 0) of the distribution Dist
// returns for the same token; the distribution is still read once and
// checked. Like Dist, it may be called from several goroutines at once.
type Entropies interface {
	Entropy(i, j int) (float64, error)
}

// Dense is a Distributions held in memory: row start_i + j of a [ΣL_i, V]
// batch is p_{i,j}. It is the source for tests, the conform tool and
// callers with few enough tokens to keep every row; it is safe for
// concurrent use and copies nothing.
type Dense[F tensor.Float] struct {
	probs tensor.Batch[F]
	start []int
}

// NewDense returns a Dense over probs, whose rows are the distributions of
// response 0's lengths[0] tokens, then response 1's, and so on.
func NewDense[F tensor.Float](probs tensor.Batch[F], lengths []int) (*Dense[F], error) {
	if err := probs.Check("probs"); err != nil {
		return nil, fmt.Errorf("appo: %w", err)
	}
	for i, n := range lengths {
		if n < 0 {
			return nil, fmt.Errorf("appo: %w", tensor.Errorf(tensor.ErrRange, "lengths", tensor.At(i), "%d is negative", n))
		}
	}
	if total := sum(lengths); total != probs.B {
		return nil, fmt.Errorf("appo: %w", tensor.Errorf(tensor.ErrShape, "probs", nil,
			"%d rows, want one per token: Σ lengths = %d", probs.B, total))
	}
	start := make([]int, len(lengths)+1)
	for i, n := range lengths {
		start[i+1] = start[i] + n
	}
	return &Dense[F]{probs: probs, start: start}, nil
}

// sum returns the sum of the non-negative xs, saturating at math.MaxInt
// instead of overflowing.
func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		if x > 0 && s > math.MaxInt-x {
			return math.MaxInt
		}
		s += x
	}
	return s
}

// Vocab returns V.
func (d *Dense[F]) Vocab() int { return d.probs.T }

// Len returns the number of tokens of response i, 0 for an i out of range.
func (d *Dense[F]) Len(i int) int {
	if i < 0 || i+1 >= len(d.start) {
		return 0
	}
	return d.start[i+1] - d.start[i]
}

// Dist returns row p_{i,j} itself; dst is not used.
func (d *Dense[F]) Dist(_ []F, i, j int) ([]F, error) {
	if i < 0 || i+1 >= len(d.start) || j < 0 || j >= d.start[i+1]-d.start[i] {
		return nil, tensor.Errorf(tensor.ErrRange, "token", tensor.At(i, j),
			"no such token: %d responses, response %d has %d tokens", len(d.start)-1, i, d.Len(i))
	}
	return d.probs.Row(d.start[i] + j), nil
}

// Check validates every row as Weights validates the rows it reads:
// finite, ≥ 0, and summing to 1 within sumTol. Weights reads only the rows
// of tokens in a perception group; Check is for callers that want the
// whole input vetted.
func (d *Dense[F]) Check(sumTol float64) error {
	for i := range len(d.start) - 1 {
		for j := range d.Len(i) {
			if err := checkDist(d.probs.Row(d.start[i]+j), i, j, d.probs.T, sumTol); err != nil {
				return fmt.Errorf("appo: %w", err)
			}
		}
	}
	return nil
}

// checkDist validates p_{i,j}: length V, finite, ≥ 0, summing to 1 within
// sumTol.
func checkDist[F tensor.Float](p []F, i, j, vocab int, sumTol float64) error {
	if len(p) != vocab {
		return tensor.Errorf(tensor.ErrShape, "dists", tensor.At(i, j), "length %d, want V = %d", len(p), vocab)
	}
	var s float64
	for v, x := range p {
		if !(x >= 0) || !tensor.IsFinite(x) {
			return badProbability(tensor.At(i, j, v), float64(x))
		}
		s += float64(x)
	}
	if math.Abs(s-1) > sumTol {
		return badSum(tensor.At(i, j), s, sumTol)
	}
	return nil
}

// badProbability reports an entry of a distribution that is negative or
// not finite.
func badProbability(at []int, x float64) error {
	if !tensor.IsFinite(x) {
		return tensor.Errorf(tensor.ErrNonFinite, "dists", at, "%v", x)
	}
	return tensor.Errorf(tensor.ErrRange, "dists", at, "probability %v is negative", x)
}

// badSum reports a distribution whose probabilities sum to s, off 1 by
// more than sumTol.
func badSum(at []int, s, sumTol float64) error {
	return tensor.Errorf(tensor.ErrRange, "dists", at,
		"probabilities sum to %.9g, want 1 within Config.SumTol = %g", s, sumTol)
}
