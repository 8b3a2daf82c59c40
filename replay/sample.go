package replay

import (
	"fmt"
	"math/rand/v2"

	"github.com/rlpost/rlpost/tensor"
)

// SampleOptions configure Sample.
type SampleOptions struct {
	// Weights are the relative probabilities of drawing from each tier,
	// normally a Curriculum's weights at the current training progress.
	// Tiers with no experience left to draw are skipped and the others
	// renormalised. All zero (the default) draws uniformly over the
	// buffer's experiences, i.e. in proportion to the tier sizes.
	Weights TierWeights
	// Replace draws with replacement. By default one Sample call never
	// returns the same experience twice.
	Replace bool
	// ForPrompt makes Sample draw the experiences of Prompt first — the
	// past responses to the prompt whose fresh group the trainer is
	// completing, which is how replay restores a signal to a group whose
	// on-policy advantages vanished (AVATAR §4.1, Eq. 3). They are drawn
	// uniformly, ignoring Weights; with Replace, every draw comes from
	// them as long as there is one.
	ForPrompt bool
	Prompt    uint64
	// NoFallback, with ForPrompt, makes Sample return only the prompt's
	// experiences when it has fewer than asked. By default the remaining
	// draws fall back to the tier-weighted draw over the other prompts'
	// experiences, marked Sampled.Fallback.
	NoFallback bool
}

// Sample draws len(dst) experiences into dst and returns how many it drew:
// fewer when the buffer (or the tiers with positive weight) runs out, with
// opt.Replace false. Each draw picks a tier with probability proportional
// to its weight among the tiers that have experiences left, then an
// experience of that tier uniformly. With opt.ForPrompt the prompt's own
// experiences come first (see SampleOptions); finding them costs one pass
// over the buffer. Given the same buffer contents and the same generator
// state, the draws are the same.
func (b *Buffer) Sample(dst []Sampled, rng *rand.Rand, opt SampleOptions) (int, error) {
	if rng == nil {
		return 0, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "rng", nil, "nil generator"))
	}
	if err := opt.Weights.Validate(); err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var left [NumTiers]int
	for t := range b.tiers {
		left[t] = b.tiers[t].n
		b.picked[t] = b.picked[t][:0]
	}
	k := 0
	if opt.ForPrompt {
		k = b.drawPrompt(dst, rng, opt, &left)
		if k == len(dst) || opt.NoFallback {
			return k, nil
		}
	}
	for ; k < len(dst); k++ {
		t, i, ok := b.drawTier(rng, opt, &left)
		if !ok {
			return k, nil
		}
		dst[k] = b.sampled(t, i)
		dst[k].Fallback = opt.ForPrompt
	}
	return len(dst), nil
}

// drawTier picks a tier by weight among those with experiences left, then
// one of its experiences not yet picked (any, with opt.Replace).
func (b *Buffer) drawTier(rng *rand.Rand, opt SampleOptions, left *[NumTiers]int) (Tier, int, bool) {
	var w TierWeights
	for t, n := range left {
		if n == 0 {
			continue
		}
		if opt.Weights == (TierWeights{}) {
			w[t] = float64(n)
		} else {
			w[t] = opt.Weights[t]
		}
	}
	total := w.sum()
	if total == 0 {
		return 0, 0, false
	}
	t := pick(w, total, rng.Float64())
	if opt.Replace && len(b.picked[t]) == 0 {
		return t, rng.IntN(left[t]), true
	}
	i := take(&b.picked[t], rng.IntN(left[t]))
	if !opt.Replace {
		left[t]--
	} else {
		// With replacement only the prompt's own experiences, marked
		// picked by drawPrompt, are excluded: put i back.
		b.picked[t] = removeSorted(b.picked[t], i)
	}
	return t, i, true
}

// drawPrompt draws the experiences of opt.Prompt into dst and marks them
// all picked, so that a fallback draw cannot return them. It returns the
// number drawn.
func (b *Buffer) drawPrompt(dst []Sampled, rng *rand.Rand, opt SampleOptions, left *[NumTiers]int) int {
	m := b.matches[:0]
	for t := range b.tiers {
		f := &b.tiers[t]
		for i := range f.n {
			if f.at(i).Prompt == opt.Prompt {
				m = append(m, location{Tier(t), i})
			}
		}
	}
	b.matches = m
	k := 0
	switch {
	case len(m) == 0:
	case opt.Replace:
		for ; k < len(dst); k++ {
			l := m[rng.IntN(len(m))]
			dst[k] = b.sampled(l.tier, l.i)
		}
	default:
		// A partial Fisher–Yates shuffle: the first k of m are the draws.
		for ; k < len(dst) && k < len(m); k++ {
			j := k + rng.IntN(len(m)-k)
			m[k], m[j] = m[j], m[k]
			dst[k] = b.sampled(m[k].tier, m[k].i)
		}
	}
	for _, l := range m {
		b.picked[l.tier] = insertSorted(b.picked[l.tier], l.i)
		left[l.tier]--
	}
	return k
}

// location is an experience's place in the buffer.
type location struct {
	tier Tier
	i    int
}

// sampled returns the i-th experience of tier t as handed out, counting
// its age.
func (b *Buffer) sampled(t Tier, i int) Sampled {
	e := b.tiers[t].at(i)
	age := b.version - e.Version
	b.countAge(age)
	return Sampled{Experience: e.Experience, ID: e.id, Tier: t, Age: age, Baseline: b.baseline(e)}
}

// baseline returns R̄ of e's prompt now, or at e's insertion if the VCRS
// has forgotten the prompt. The slot remembered in e spares the map lookup
// while the prompt keeps its slot.
func (b *Buffer) baseline(e *entry) float64 {
	v := b.vcrs
	if s := e.slot; s >= 0 && int(s) < v.slots.len() && v.slot(s).id == e.Prompt {
		return v.slot(s).mean
	}
	s := v.slotOf(e.Prompt)
	e.slot = s
	if s < 0 {
		return e.baseline
	}
	return v.slot(s).mean
}

// pick returns the tier where u·total falls in the cumulative weights.
func pick(w TierWeights, total, u float64) Tier {
	x := u * total
	last := Tier(0)
	for t, wt := range w {
		if wt == 0 {
			continue
		}
		if x < wt {
			return Tier(t)
		}
		x -= wt
		last = Tier(t)
	}
	return last // rounding left x just above the last weight
}

// take maps j, an index among the positions not yet in picked (sorted),
// to the position itself, and records it.
func take(picked *[]int, j int) int {
	p := *picked
	for k := 0; k < len(p) && p[k] <= j; k++ {
		j++
	}
	*picked = insertSorted(p, j)
	return j
}

// insertSorted inserts x into the sorted p.
func insertSorted(p []int, x int) []int {
	k := 0
	for k < len(p) && p[k] < x {
		k++
	}
	p = append(p, 0)
	copy(p[k+1:], p[k:])
	p[k] = x
	return p
}

// removeSorted removes x from the sorted p.
func removeSorted(p []int, x int) []int {
	for k, y := range p {
		if y == x {
			return append(p[:k], p[k+1:]...)
		}
	}
	return p
}
