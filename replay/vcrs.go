package replay

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// DefaultWindow is W, the number of recent on-policy rewards R̄(q) averages
// (AVATAR §4.4: "its last 20 new (on-policy) instances").
const DefaultWindow = 20

// MaxWindow bounds W: every tracked prompt holds W float64 rewards.
const MaxWindow = 1 << 12

// DefaultMaxPrompts is how many prompts a VCRS tracks before it forgets the
// least recently updated one: about 0.28 GB at W = 20 when full.
const DefaultMaxPrompts = 1 << 20

// MaxAbsReward bounds the rewards a VCRS accepts, so that no sum of a
// window of them can overflow float64.
const MaxAbsReward = 1e300

// checkReward reports a reward the VCRS cannot average.
func checkReward(name string, r float64) error {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return tensor.Errorf(tensor.ErrNonFinite, name, nil, "%v", r)
	case math.Abs(r) > MaxAbsReward:
		return tensor.Errorf(tensor.ErrRange, name, nil, "%v, want |reward| ≤ %g", r, MaxAbsReward)
	}
	return nil
}

// none marks an absent slot link.
const none int32 = -1

// slot is the state of one tracked prompt. Slots live in one slice and link
// to each other by index, so tracking a prompt costs no allocation of its
// own and the whole tracker is a few flat arrays.
type slot struct {
	id        uint64
	sum, mean float64 // running sum of the window and R̄ = sum/n
	// newer and older link the slots in order of their last update.
	newer, older int32
	n, pos       uint16 // rewards in the window; next ring position
	hints        uint16 // hints given for this prompt
}

// VCRS is AVATAR's Video-Context Reference Score (§4.4): for every prompt q,
// R̄(q), the mean of its last W on-policy rewards, plus the distribution of
// R̄ over the prompts it tracks, which the buffer's tiers are cut from.
//
// An update costs O(1) for the mean — a ring of W rewards and a running
// sum, re-added from the ring every time the ring wraps so that rounding
// from the subtractions cannot accumulate beyond W updates — and
// O(log n + 512) for moving it in a sorted multiset of the n tracked means
// (blocks of at most 512 values, indexed by a Fenwick tree), from which
// ranks and quantiles come in O(log n). An update that leaves the mean as
// it was (a binary reward replacing an equal one) skips the second part.
//
// Memory is bounded: at most MaxPrompts prompts are tracked, each taking
// 8·W + 40 bytes, its map entry and its place in the multiset (263 bytes
// in all measured at W = 20 and 2^20 prompts, BenchmarkVCRSMemory); a new
// prompt arriving at capacity evicts the least recently updated one
// (reads do not count as updates). A VCRS is not safe for concurrent use;
// Buffer wraps one behind its lock.
type VCRS struct {
	window, max int
	index       map[uint64]int32
	slots       chunked[slot]    // stride 1
	rings       chunked[float64] // stride W: slot s owns ring item s
	newest      int32
	oldest      int32
	means       sorted
	forgotten   uint64
}

// NewVCRS returns a tracker with window W and room for maxPrompts prompts.
func NewVCRS(window, maxPrompts int) (*VCRS, error) {
	if window < 1 || window > MaxWindow {
		return nil, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "window", nil, "%d, want 1..%d", window, MaxWindow))
	}
	if maxPrompts < 1 || maxPrompts > math.MaxInt32 {
		return nil, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "max_prompts", nil, "%d, want 1..%d", maxPrompts, math.MaxInt32))
	}
	return &VCRS{window: window, max: maxPrompts, index: map[uint64]int32{}, newest: none, oldest: none,
		slots: newChunked[slot](1), rings: newChunked[float64](window)}, nil
}

// Window returns W.
func (v *VCRS) Window() int { return v.window }

// MaxPrompts returns the capacity in prompts.
func (v *VCRS) MaxPrompts() int { return v.max }

// Len returns the number of tracked prompts.
func (v *VCRS) Len() int { return len(v.index) }

// Forgotten returns how many prompts were evicted to make room.
func (v *VCRS) Forgotten() uint64 { return v.forgotten }

// Observe records an on-policy reward of prompt: R̄(prompt) becomes the mean
// of its last W rewards. |reward| must not exceed MaxAbsReward.
func (v *VCRS) Observe(prompt uint64, reward float64) error {
	if err := checkReward("reward", reward); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	v.observe(prompt, reward)
	return nil
}

// Mean returns R̄(prompt) and how many rewards it averages; ok is false for
// a prompt that is not tracked.
func (v *VCRS) Mean(prompt uint64) (mean float64, n int, ok bool) {
	s, ok := v.index[prompt]
	if !ok {
		return 0, 0, false
	}
	sl := v.slot(s)
	return sl.mean, int(sl.n), true
}

// slotOf returns the slot of prompt, or none.
func (v *VCRS) slotOf(prompt uint64) int32 {
	if s, ok := v.index[prompt]; ok {
		return s
	}
	return none
}

// Position returns where R̄(prompt) sits in the distribution of R̄ over the
// tracked prompts, as a fraction in [0, 1): with b prompts strictly below
// it, out of n,
//
//	p = b/n.
//
// Ties resolve to the bottom of the tied block: every prompt that shares
// its R̄ with others gets the position of the lowest of them, so a block of
// tied prompts (common with binary rewards, whose R̄ is a multiple of 1/W,
// and universal early in training, when every prompt is at R̄ = 0) lands
// whole in the hardest tier it reaches. The rule is deterministic — it
// depends on R̄ and the distribution only, never on the prompt id — and it
// guarantees that a prompt whose R̄ is at or below the Hard quantile always
// goes to the Hard tier. The price is that tiers no longer receive prompts
// exactly in proportion to their shares when ties straddle a cut: the
// harder tier takes the whole block. ok is false for a prompt that is not
// tracked.
func (v *VCRS) Position(prompt uint64) (p float64, ok bool) {
	s, ok := v.index[prompt]
	if !ok {
		return 0, false
	}
	return v.position(v.slot(s).mean), true
}

// position is Position for the value m.
func (v *VCRS) position(m float64) float64 {
	n := len(v.index)
	if n == 0 {
		return 0
	}
	return float64(v.means.count(m, false)) / float64(n)
}

// Quantile returns the R̄ of the tracked prompt of rank ⌊p·n⌋ (0-based, the
// smallest being rank 0): the inverse of the empirical distribution.
func (v *VCRS) Quantile(p float64) (float64, error) {
	if !(p >= 0 && p <= 1) {
		return 0, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "p", nil, "%v, want a number in [0, 1]", p))
	}
	n := len(v.index)
	if n == 0 {
		return 0, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "vcrs", nil, "no prompt tracked"))
	}
	return v.means.kth(min(int(p*float64(n)), n-1)), nil
}

// Histogram counts the tracked prompts by R̄ in len(dst) equal bins over
// [lo, hi]; means below lo count in the first bin and above hi in the last.
// It costs O(len(dst)·log n) and reads no prompt.
func (v *VCRS) Histogram(dst []int, lo, hi float64) error {
	if len(dst) == 0 {
		return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "dst", nil, "no bins"))
	}
	if !(lo < hi) || math.IsInf(hi-lo, 0) {
		return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "lo, hi", nil, "[%v, %v], want finite lo < hi a finite distance apart", lo, hi))
	}
	k := len(dst)
	width := (hi - lo) / float64(k)
	prev := 0
	for i := range dst {
		c := len(v.index)
		if i < k-1 {
			c = v.means.count(lo+float64(i+1)*width, false)
		}
		dst[i] = c - prev
		prev = c
	}
	return nil
}

// observe is Observe for a valid reward; it returns the prompt's slot.
func (v *VCRS) observe(prompt uint64, reward float64) int32 {
	s, ok := v.index[prompt]
	if ok {
		v.unlink(s)
		old := v.slot(s).mean
		v.push(s, reward)
		if m := v.slot(s).mean; m != old {
			v.means.erase(old)
			v.means.insert(m)
		}
	} else {
		s = v.claim(prompt)
		v.push(s, reward)
		v.means.insert(v.slot(s).mean)
	}
	v.linkNewest(s)
	return s
}

// push adds a reward to the window of slot s and refreshes its mean.
func (v *VCRS) push(s int32, reward float64) {
	sl := v.slotMut(s)
	w := v.window
	ring := v.rings.mutItem(int(s))
	if int(sl.n) == w {
		sl.sum -= ring[sl.pos]
	} else {
		sl.n++
	}
	ring[sl.pos] = reward
	sl.sum += reward
	sl.pos++
	if int(sl.pos) == w {
		sl.pos = 0
		// The ring is full and in chronological order: re-add it, so the
		// sum carries no rounding from the subtractions of the last cycle.
		var sum float64
		for _, r := range ring {
			sum += r
		}
		sl.sum = sum
	}
	sl.mean = sl.sum / float64(sl.n)
}

// claim returns a fresh slot for prompt, evicting the least recently
// updated prompt at capacity.
func (v *VCRS) claim(prompt uint64) int32 {
	var s int32
	if v.slots.len() < v.max {
		s = int32(v.slots.len())
		v.slots.grow(int(s) + 1)
		v.rings.grow(int(s) + 1)
	} else {
		s = v.oldest
		v.means.erase(v.slot(s).mean)
		v.unlink(s)
		delete(v.index, v.slot(s).id)
		clear(v.rings.mutItem(int(s)))
		v.forgotten++
	}
	*v.slotMut(s) = slot{id: prompt, newer: none, older: none}
	v.index[prompt] = s
	return s
}

// reserve makes room for n more prompts at once (Restore knows how many
// are coming), so that the index map is allocated once at its final size
// instead of growing through rehashes. The chunked arrays need no
// reservation: they grow a chunk at a time.
func (v *VCRS) reserve(n int) {
	need := min(v.slots.len()+n, v.max)
	if len(v.index) == 0 {
		v.index = make(map[uint64]int32, need)
	}
}

// slot returns slot s for reading; slotMut for writing (see chunked).
func (v *VCRS) slot(s int32) *slot    { return v.slots.at(int(s)) }
func (v *VCRS) slotMut(s int32) *slot { return v.slots.mut(int(s)) }

func (v *VCRS) unlink(s int32) {
	sl := v.slotMut(s)
	if sl.newer != none {
		v.slotMut(sl.newer).older = sl.older
	} else {
		v.newest = sl.older
	}
	if sl.older != none {
		v.slotMut(sl.older).newer = sl.newer
	} else {
		v.oldest = sl.newer
	}
	sl.newer, sl.older = none, none
}

func (v *VCRS) linkNewest(s int32) {
	sl := v.slotMut(s)
	sl.older, sl.newer = v.newest, none
	if v.newest != none {
		v.slotMut(v.newest).newer = s
	} else {
		v.oldest = s
	}
	v.newest = s
}
