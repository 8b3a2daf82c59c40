package replay

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

// AgeBins is the number of bins of Stats.AgeHist: ages 0, 1, 2–3, 4–7,
// 8–15, 16–31, 32–63 and ≥ 64 policy versions.
const AgeBins = 8

// counters are the buffer's running totals, kept together so that Stats
// and snapshots copy them at once.
type counters struct {
	offered  uint64
	inserted [NumTiers]uint64
	evicted  [NumTiers]uint64
	expired  [NumTiers]uint64
	arrival  uint64 // stale on arrival
	sampled  uint64
	ageSum   uint64
	ageMax   int64
	ageHist  [AgeBins]uint64
	hints    uint64
}

// Stats describe the buffer for logging.
type Stats struct {
	// Len and Capacity are per tier.
	Len, Capacity [NumTiers]int
	// Version is the current policy version.
	Version int64
	// Prompts is the number of prompts the VCRS tracks; Forgotten how many
	// it evicted to make room.
	Prompts   int
	Forgotten uint64
	// HardBelow and EasyFrom are the R̄ quantiles at the Hard and Easy
	// shares (the tier cuts, up to ties); 0 while no prompt is tracked.
	HardBelow, EasyFrom float64
	// Offered counts the valid experiences given to Add. Each is in the
	// buffer, evicted, or stale:
	// Offered = Σ Len + Σ Evicted + Σ Expired + StaleOnArrival.
	Offered        uint64
	Inserted       [NumTiers]uint64
	Evicted        [NumTiers]uint64
	Expired        [NumTiers]uint64
	StaleOnArrival uint64
	// Sampled counts the experiences Sample returned; MeanAge, MaxAge and
	// AgeHist describe their ages (negative ages count as 0).
	Sampled uint64
	MeanAge float64
	MaxAge  int64
	AgeHist [AgeBins]uint64
	// Hints counts the hints Hinter gave.
	Hints uint64
}

// entry is a stored experience.
type entry struct {
	Experience
	id       uint64
	baseline float64 // R̄(q) at insertion
	slot     int32   // the VCRS slot of the prompt when last looked up
}

// fifo is one tier: a ring of up to limit entries, oldest at head, in a
// chunked array that grows as the tier fills (so that a buffer costs what
// it holds, not its capacity) and that snapshots share (see chunked).
type fifo struct {
	ring    chunked[entry]
	limit   int
	head, n int
}

func (f *fifo) index(i int) int {
	j := f.head + i
	if j >= f.limit {
		j -= f.limit
	}
	return j
}

// at returns the i-th oldest entry for reading.
func (f *fifo) at(i int) *entry { return f.ring.at(f.index(i)) }

// mut returns the i-th oldest entry (i ≤ n) for writing, growing the ring
// when i is a place it has not used yet.
func (f *fifo) mut(i int) *entry {
	j := f.index(i)
	if j >= f.ring.len() {
		f.ring.grow(j + 1)
	}
	return f.ring.mut(j)
}

// Buffer is AVATAR's stratified replay buffer (§4.1) with its VCRS (§4.4).
// It is safe for concurrent use: rollout workers Add while the trainer
// Samples. One mutex guards everything; Add and a tier-weighted Sample
// hold it for well under a microsecond, a Sample for one prompt for one
// pass over the buffer (about 10 µs at 10 000 experiences).
type Buffer struct {
	mu      sync.Mutex
	cfg     Config
	vcrs    *VCRS
	tiers   [NumTiers]fifo
	version int64
	nextID  uint64
	c       counters
	drop    func(Dropped)
	// scratch, reused under the lock
	scratch []observed
	picked  [NumTiers][]int
	matches []location
}

// New returns an empty buffer.
func New(cfg Config) (*Buffer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	v, err := NewVCRS(cfg.Window, cfg.MaxPrompts)
	if err != nil {
		return nil, err
	}
	b := &Buffer{cfg: cfg, vcrs: v}
	for t, n := range cfg.capacities() {
		b.tiers[t] = fifo{ring: newChunked[entry](1), limit: n}
	}
	return b, nil
}

// Config returns the buffer's configuration.
func (b *Buffer) Config() Config { return b.cfg }

// SetDropFunc makes f see every experience that leaves the buffer or is
// refused as stale, for example to release what its payload refers to. f
// runs with the buffer locked and must not call the buffer. nil removes it.
func (b *Buffer) SetDropFunc(f func(Dropped)) {
	b.mu.Lock()
	b.drop = f
	b.mu.Unlock()
}

// Add offers one on-policy experience: its reward updates R̄ of its prompt
// and it is stored in the tier of the prompt's updated position in the R̄
// distribution (Algorithm 1, line 10), evicting that tier's oldest
// experience when full. An experience more than MaxStaleness versions old
// is dropped instead and its reward ignored.
func (b *Buffer) Add(e Experience) (Receipt, error) {
	if err := e.validate(-1); err != nil {
		return Receipt{}, fmt.Errorf("replay: %w", err)
	}
	if err := b.checkVersion(e.Version, "experience.version", nil); err != nil {
		return Receipt{}, err
	}
	var r [1]Receipt
	b.add(r[:], []Experience{e})
	return r[0], nil
}

// AddGroup adds experiences as Add does, but updates R̄ with all their
// rewards before placing any of them, so the responses to one prompt
// generated together go to the same tier. dst, if not nil, receives a
// receipt per experience. Nothing is added if any experience is invalid.
func (b *Buffer) AddGroup(dst []Receipt, es []Experience) error {
	if dst != nil && len(dst) != len(es) {
		return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d", len(dst), len(es)))
	}
	for i := range es {
		if err := es[i].validate(i); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		if err := b.checkVersion(es[i].Version, "experiences.version", tensor.At(i)); err != nil {
			return err
		}
	}
	b.add(dst, es)
	return nil
}

// checkVersion refuses an experience from a policy newer than the one the
// buffer was told of (SetVersion), as grpo.Fresh does: the caller's
// bookkeeping is wrong, and the staleness guard would keep such an
// experience longer than it should.
func (b *Buffer) checkVersion(v int64, arg string, at []int) error {
	b.mu.Lock()
	cur := b.version
	b.mu.Unlock()
	if v > cur {
		return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, arg, at,
			"%d is newer than the buffer's policy version %d (call SetVersion first)", v, cur))
	}
	return nil
}

// add is AddGroup for valid experiences.
func (b *Buffer) add(dst []Receipt, es []Experience) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cap(b.scratch) < len(es) {
		b.scratch = make([]observed, len(es))
	}
	obs := b.scratch[:len(es)]
	first := b.nextID
	b.nextID += uint64(len(es))
	b.c.offered += uint64(len(es))
	v := b.vcrs
	for i := range es {
		e := &es[i]
		if b.stale(e.Version) {
			continue
		}
		s := v.observe(e.Prompt, e.Reward)
		obs[i] = observed{slot: s, mean: v.slot(s).mean}
	}
	for i := range es {
		e := &es[i]
		id := first + uint64(i)
		if b.stale(e.Version) {
			b.c.arrival++
			b.dropped(Dropped{Experience: *e, ID: id, Reason: StaleOnArrival})
			if dst != nil {
				dst[i] = Receipt{ID: id, Stale: true}
			}
			continue
		}
		// A later member of the group may have moved R̄ on, or — only when
		// the group alone brought more new prompts than MaxPrompts —
		// evicted the prompt, whose last mean then stands in.
		o := obs[i]
		if v.slot(o.slot).id == e.Prompt {
			o.mean = v.slot(o.slot).mean
		} else {
			o.slot = v.slotOf(e.Prompt)
			if o.slot != none {
				o.mean = v.slot(o.slot).mean
			}
		}
		t := b.cfg.tier(v.position(o.mean))
		b.insert(t, entry{Experience: *e, id: id, baseline: o.mean, slot: o.slot})
		if dst != nil {
			dst[i] = Receipt{ID: id, Tier: t}
		}
	}
}

// observed is what add's first pass learnt about an experience's prompt.
type observed struct {
	slot int32
	mean float64
}

// stale reports whether version is beyond the staleness guard.
func (b *Buffer) stale(version int64) bool {
	return b.cfg.MaxStaleness > 0 && version < b.version-b.cfg.MaxStaleness
}

func (b *Buffer) dropped(d Dropped) {
	if b.drop != nil {
		b.drop(d)
	}
}

// insert appends e to tier t, evicting the tier's oldest when it is full.
func (b *Buffer) insert(t Tier, e entry) {
	f := &b.tiers[t]
	if f.n == f.limit {
		old := f.mut(0)
		b.c.evicted[t]++
		b.dropped(Dropped{Experience: old.Experience, ID: old.id, Tier: t, Reason: Evicted})
		*old = entry{}
		f.head++
		if f.head == f.limit {
			f.head = 0
		}
		f.n--
	}
	*f.mut(f.n) = e
	f.n++
	b.c.inserted[t]++
}

// Observe records an on-policy reward of prompt in the VCRS without storing
// an experience, for responses the trainer does not keep.
func (b *Buffer) Observe(prompt uint64, reward float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vcrs.Observe(prompt, reward)
}

// Baseline returns R̄(prompt) and how many rewards it averages; ok is false
// for a prompt the VCRS does not track.
func (b *Buffer) Baseline(prompt uint64) (mean float64, n int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vcrs.Mean(prompt)
}

// Position returns the prompt's position in the R̄ distribution
// (VCRS.Position), which decides the tier of its next experience.
func (b *Buffer) Position(prompt uint64) (p float64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vcrs.Position(prompt)
}

// TierOf returns the tier the prompt's next experience would go to, if the
// prompt is tracked.
func (b *Buffer) TierOf(prompt uint64) (Tier, bool) {
	p, ok := b.Position(prompt)
	return b.cfg.tier(p), ok
}

// Quantile returns the p-quantile of R̄ over the tracked prompts
// (VCRS.Quantile).
func (b *Buffer) Quantile(p float64) (float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vcrs.Quantile(p)
}

// Histogram counts the tracked prompts by R̄ (VCRS.Histogram).
func (b *Buffer) Histogram(dst []int, lo, hi float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vcrs.Histogram(dst, lo, hi)
}

// Len returns the number of stored experiences.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tiers[Easy].n + b.tiers[Medium].n + b.tiers[Hard].n
}

// Version returns the current policy version.
func (b *Buffer) Version() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version
}

// SetVersion announces the policy version the trainer now holds; it may
// not go back. With the staleness guard on, every stored experience more
// than MaxStaleness versions older is dropped (Expired), which takes one
// pass over the buffer.
func (b *Buffer) SetVersion(v int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v < b.version {
		return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "version", nil, "%d, the buffer is at %d already", v, b.version))
	}
	b.version = v
	if b.cfg.MaxStaleness == 0 {
		return nil
	}
	for t := range b.tiers {
		f := &b.tiers[t]
		kept := 0
		for i := range f.n {
			e := f.at(i)
			if b.stale(e.Version) {
				b.c.expired[t]++
				b.dropped(Dropped{Experience: e.Experience, ID: e.id, Tier: Tier(t), Reason: Expired})
				continue
			}
			if kept != i {
				*f.mut(kept) = *e
			}
			kept++
		}
		for i := kept; i < f.n; i++ {
			*f.mut(i) = entry{}
		}
		f.n = kept
	}
	return nil
}
func (b *Buffer) countAge(age int64) {
	a := max(age, 0)
	b.c.sampled++
	b.c.ageSum += uint64(a)
	b.c.ageMax = max(b.c.ageMax, a)
	b.c.ageHist[min(bits.Len64(uint64(a)), AgeBins-1)]++
}

// Entries appends every stored experience to dst, tier by tier (Easy,
// Medium, Hard), oldest first, and returns the extended slice.
func (b *Buffer) Entries(dst []Sampled) []Sampled {
	b.mu.Lock()
	defer b.mu.Unlock()
	for t := range b.tiers {
		f := &b.tiers[t]
		for i := range f.n {
			e := f.at(i)
			dst = append(dst, Sampled{Experience: e.Experience, ID: e.id, Tier: Tier(t), Age: b.version - e.Version, Baseline: b.baseline(e)})
		}
	}
	return dst
}

// Stats returns the buffer's statistics.
func (b *Buffer) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &b.c
	s := Stats{
		Version: b.version, Prompts: b.vcrs.Len(), Forgotten: b.vcrs.Forgotten(),
		Offered: c.offered, Inserted: c.inserted, Evicted: c.evicted, Expired: c.expired,
		StaleOnArrival: c.arrival, Sampled: c.sampled, MaxAge: c.ageMax, AgeHist: c.ageHist,
		Hints: c.hints,
	}
	for t := range b.tiers {
		s.Len[t], s.Capacity[t] = b.tiers[t].n, b.tiers[t].limit
	}
	if c.sampled > 0 {
		s.MeanAge = float64(c.ageSum) / float64(c.sampled)
	}
	if b.vcrs.Len() > 0 {
		s.HardBelow, _ = b.vcrs.Quantile(b.cfg.Shares[Hard])
		s.EasyFrom, _ = b.vcrs.Quantile(b.cfg.Shares[Hard] + b.cfg.Shares[Medium])
	}
	return s
}
