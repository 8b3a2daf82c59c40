package appo

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/internal/parallel"
	"github.com/rlpost/rlpost/tensor"
)

// The discrepancies (Eq. 11) are KL divergences of every group member's
// distribution p from its slot mean p̄, taken as
//
//	KL(p ‖ p̄) = Σ p log p − Σ p log p̄,
//
// so that the logarithms number V per grouped token (the first term,
// which the source may give as an entropy) plus V per slot (log p̄),
// instead of V per member.
//
// The rows are the bulk of the memory traffic: at the paper's size with
// Qwen2.5-VL's 152 064-word vocabulary, the 3 555 grouped tokens hold
// 2.2 GB of float32 distributions, and the 960 slots have 7 680 members.
// Reading each row once for its Σ p log p and then once per slot it is
// in would move 7 GB. Instead the vocabulary is cut into blocks of
// blockWords words, and each block of every row is read from memory once:
// the block pass takes a block and runs every slot over it, a member whose
// row it meets for the first time going through the row kernel (Σ p log p
// and Σ p) just before, so that the slot mean, its log and the members'
// dot products find the rows' blocks in the cache, as far as it keeps
// them (3 555 rows × 2 KB, 7 MB per core).
// The partial sums of each block go to per-part slots and are combined in
// part order afterwards, so the weights do not depend on how many cores
// ran the parts, nor on which took which.
const (
	// blockWords is the vocabulary block of the block pass: the grouped
	// rows' blocks (blockWords·4 bytes each in float32) stay in the
	// cache between their uses, and the slot kernel's log p̄ (8 bytes a
	// word) in the first-level cache. 256 measured the same at the
	// paper's size, 128 slower (more calls, each with less to do).
	blockWords = 512
	// maxParts bounds the parts, runs of consecutive blocks that one
	// worker takes at a time, each with its own partial sums: enough to
	// spread over many cores, few enough that the partial sums (maxParts
	// float64s per grouped token and per member) stay small.
	maxParts = 32
)

// fetchPass fetches the distribution of every grouped token, one token per
// piece, and, from a source that implements Entropies, its entropy. Each
// distribution is fetched once however many groups its token is in; the
// block pass then reads and checks it.
type fetchPass[F tensor.Float] struct{ w *Weighter[F] }

func (p fetchPass[F]) Run(u int) {
	w := p.w
	t, i := w.used[u], w.usedBy[u]
	j := t - w.start[i]
	sc := <-w.free
	if sc.spare == nil {
		sc.spare = w.take()
	}
	row, err := w.in.Dists.Dist(sc.spare, i, j)
	// A row written into the spare stays there until the call ends, and
	// the worker takes a new spare for its next token; any other row is
	// the source's own, which Distributions promises to keep unchanged.
	if err == nil && tensor.Overlaps(row, sc.spare) {
		sc.spare = nil
	}
	w.free <- sc
	switch {
	case err != nil:
		w.errs[u] = fmt.Errorf("Dists.Dist(%d, %d): %w", i, j, err)
		return
	case len(row) != w.vocab:
		w.errs[u] = tensor.Errorf(tensor.ErrShape, "dists", tensor.At(i, j), "length %d, want V = %d", len(row), w.vocab)
		return
	}
	w.rows[u] = row
	if w.entropies == nil {
		return
	}
	// An error here comes after the row's own check, which the block
	// pass makes: combine reports the check first.
	h, err := w.entropies.Entropy(i, j)
	switch {
	case err != nil:
		w.errs[u] = fmt.Errorf("Dists.Entropy(%d, %d): %w", i, j, err)
	case !tensor.IsFinite(h):
		w.errs[u] = tensor.Errorf(tensor.ErrNonFinite, "dists", tensor.At(i, j), "Entropy = %v", h)
	case h < -w.cfg.SumTol:
		// An entropy is ≥ 0, or a little below when a probability
		// exceeds 1 within the tolerance on the sum (−p·log p ≥ −SumTol
		// for p ≤ 1 + SumTol, to first order); anything else is a bug
		// in the source.
		w.errs[u] = tensor.Errorf(tensor.ErrRange, "dists", tensor.At(i, j), "Entropy = %v is negative", h)
	default:
		w.negEnt[u] = -h
	}
}

// blockPass runs the blocks of one part, in order. For each block it runs
// the slots with two members or more in turn; a member whose row has not
// been read yet in this block goes through the row kernel first, which
// reads the row's block from memory into the cache where the slot kernel
// finds it, and the slot kernel prefetches the next slot's members. The
// rows in no such slot are only checked, last. The part's partial
// sums are its own, so the parts may run in any order on any worker.
type blockPass[F tensor.Float] struct{ w *Weighter[F] }

func (p blockPass[F]) Run(part int) {
	w := p.w
	nu, nm := len(w.used), len(w.memAt)
	plogps, sums := w.plogpPart[part*nu:(part+1)*nu], w.sumPart[part*nu:(part+1)*nu]
	dots := w.dotPart[part*nm : (part+1)*nm]
	clear(plogps)
	clear(sums)
	clear(dots)
	withLogs := w.entropies == nil
	var acc [blockWords]float64
	slots := len(w.slotStart) - 1
	lo, hi := w.partWords(part)
	for b := lo; b < hi; b += blockWords {
		e := min(b+blockWords, hi)
		for q := range slots {
			at, end := w.slotStart[q], w.slotStart[q+1]
			for x := at; x < end; x++ {
				if w.firstUse[x] {
					u, row := w.memRow[x], w.memRows[x][b:e]
					s, sum := rowSums(row, row, withLogs)
					plogps[u] += s
					sums[u] += sum
				}
			}
			var next [][]F
			if q+1 < slots {
				next = w.memRows[end:w.slotStart[q+2]]
			}
			slotBlock(acc[:], w.memRows[at:end], b, e, dots[at:end], next)
		}
		// A lonely row's d is 0 whatever its Σ p log p: it is only
		// checked.
		for k, u := range w.lonely {
			next := w.rows[w.lonely[(k+1)%len(w.lonely)]][b:e]
			_, sum := rowSums(w.rows[u][b:e], next, false)
			sums[u] += sum
		}
	}
}

// partWords returns the words [lo, hi) of the vocabulary that part covers:
// whole blocks, spread as evenly as parts allow.
func (w *Weighter[F]) partWords(part int) (lo, hi int) {
	blocks := (w.vocab + blockWords - 1) / blockWords
	lo = part * blocks / w.parts * blockWords
	hi = min((part+1)*blocks/w.parts*blockWords, w.vocab)
	return lo, hi
}

// buildSlots lists the members of every slot with two members or more,
// slot by slot (group k, rank s): entry x of the list is w.d's entry
// memAt[x], of grouped row memRow[x], and firstUse[x] says whether it is
// the row's first entry. A slot of one member gets d = 0 here, the KL of
// a distribution from itself; lonely lists the grouped rows in no other.
func (w *Weighter[F]) buildSlots() {
	g, n := len(w.in.Rewards), w.slot[len(w.in.Rewards)]
	w.slotStart = append(w.slotStart[:0], 0)
	w.memAt, w.memRow = w.memAt[:0], w.memRow[:0]
	for k := range w.frames {
		for s := range w.nslots {
			first := len(w.memAt)
			for i := range g {
				if w.slot[i+1]-w.slot[i] > s {
					at := k*n + w.slot[i] + s
					w.memAt = append(w.memAt, at)
					w.memRow = append(w.memRow, w.rowOf[w.toks[at]])
				}
			}
			switch len(w.memAt) - first {
			case 0:
			case 1:
				w.d[w.memAt[first]] = 0 // the only member is its own mean
				w.memAt, w.memRow = w.memAt[:first], w.memRow[:first]
			default:
				w.slotStart = append(w.slotStart, len(w.memAt))
			}
		}
	}
	// The first member of each grouped row in this order reads it for the
	// row kernel; the rows with none are the lonely ones.
	w.firstUse = grow(w.firstUse, len(w.memAt))
	seen := grow(w.seen, len(w.used))
	clear(seen)
	for x, u := range w.memRow {
		w.firstUse[x] = !seen[u]
		seen[u] = true
	}
	w.lonely = w.lonely[:0]
	for u, ok := range seen {
		if !ok {
			w.lonely = append(w.lonely, u)
		}
	}
	w.seen = seen
}

// discrepancies fetches the grouped rows, runs the block pass over the
// worker pool and combines its parts into w.d.
func (w *Weighter[F]) discrepancies() error {
	nu := len(w.used)
	if nu == 0 {
		return nil
	}
	w.ensureScratch()
	w.negEnt = grow(w.negEnt, nu)
	w.rows = grow(w.rows, nu)
	clear(w.rows)
	w.errs = grow(w.errs, nu)
	clear(w.errs)
	helpers := parallel.Workers() - 1
	parallel.Do(fetchPass[F]{w}, nu, helpers)
	defer w.release()
	for u, row := range w.rows {
		if row == nil {
			return w.fetchError(u)
		}
	}

	w.buildSlots()
	w.memRows = grow(w.memRows, len(w.memRow))
	for x, u := range w.memRow {
		w.memRows[x] = w.rows[u]
	}
	w.parts = min((w.vocab+blockWords-1)/blockWords, maxParts)
	w.plogpPart = grow(w.plogpPart, w.parts*nu)
	w.sumPart = grow(w.sumPart, w.parts*nu)
	w.dotPart = grow(w.dotPart, w.parts*len(w.memAt))
	parallel.Do(blockPass[F]{w}, w.parts, helpers)
	return w.combine()
}

// combine adds up the parts of the block pass in part order, checks every
// grouped row's sum and writes the discrepancies of the slots with two
// members or more into w.d. The error is that of the lowest grouped row,
// as a row-by-row pass would report it: the row's own check first, then
// its entropy's.
func (w *Weighter[F]) combine() error {
	nu, nm := len(w.used), len(w.memAt)
	for u := range nu {
		s, sum := 0.0, 0.0
		for part := range w.parts {
			s += w.plogpPart[part*nu+u]
			sum += w.sumPart[part*nu+u]
		}
		if !(math.Abs(sum-1) <= w.cfg.SumTol) {
			return w.rowError(u, sum)
		}
		if w.errs[u] != nil {
			return w.errs[u]
		}
		if w.entropies == nil {
			w.negEnt[u] = s
		}
	}
	for x, at := range w.memAt {
		s := 0.0
		for part := range w.parts {
			s += w.dotPart[part*nm+x]
		}
		w.d[at] = w.negEnt[w.memRow[x]] - s
	}
	return nil
}

// rowError reports why grouped row u failed its check: its first entry
// that is negative or not finite, else its sum as the block pass formed it.
func (w *Weighter[F]) rowError(u int, sum float64) error {
	i := w.usedBy[u]
	j := w.used[u] - w.start[i]
	for v, x := range w.rows[u] {
		if !(x >= 0) || !tensor.IsFinite(x) {
			return badProbability(tensor.At(i, j, v), float64(x))
		}
	}
	return badSum(tensor.At(i, j), sum, w.cfg.SumTol)
}

// fetchError reports the error of the lowest grouped row when row u is the
// first whose fetch failed: the rows before it are checked one by one,
// as the block pass would have.
func (w *Weighter[F]) fetchError(u int) error {
	for r := range u {
		i := w.usedBy[r]
		if err := checkDist(w.rows[r], i, w.used[r]-w.start[i], w.vocab, w.cfg.SumTol); err != nil {
			return err
		}
		if w.errs[r] != nil {
			return w.errs[r]
		}
	}
	return w.errs[u]
}

// take returns a dst row of length V for Dist: the next of the rows kept
// from earlier calls, or a new one. A source that fills dst thus costs V
// floats of scratch per grouped token, which the Weighter keeps for the
// next call: the block pass needs every grouped row at once. A source
// that returns rows of its own, like Dense, uses one per worker.
func (w *Weighter[F]) take() []F {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nbufs == len(w.bufs) {
		w.bufs = append(w.bufs, nil)
	}
	b := grow(w.bufs[w.nbufs], w.vocab)
	w.bufs[w.nbufs] = b
	w.nbufs++
	return b
}

// release forgets the rows of this call, so that the Weighter keeps no
// source's memory alive.
func (w *Weighter[F]) release() {
	clear(w.rows)
	clear(w.memRows)
}

// ensureScratch sizes one scratch per worker and puts them all in the
// free list.
func (w *Weighter[F]) ensureScratch() {
	workers := parallel.Workers()
	if len(w.scratch) != workers {
		w.scratch = make([]*scratch[F], workers)
		for k := range w.scratch {
			w.scratch[k] = new(scratch[F])
		}
		w.free = make(chan *scratch[F], workers)
	}
	for len(w.free) > 0 {
		<-w.free
	}
	for _, sc := range w.scratch {
		sc.spare = nil
		w.free <- sc
	}
	w.nbufs = 0
}
