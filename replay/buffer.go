package replay

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

// Tier is a difficulty stratum of the buffer (AVATAR §4.1).
type Tier uint8

const (
	// Easy holds experiences of prompts in the top 25 % of R̄.
	Easy Tier = iota
	// Medium holds the next 35 %.
	Medium
	// Hard holds the bottom 40 %: the prompts the policy fails most.
	Hard
)

// NumTiers is the number of tiers.
const NumTiers = 3

var tierNames = [NumTiers]string{"easy", "medium", "hard"}

func (t Tier) String() string {
	if int(t) < NumTiers {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// TierWeights holds one non-negative number per tier, indexed by Tier:
// the shares of Config and the sampling weights of SampleOptions.
type TierWeights [NumTiers]float64

// Validate reports the first weight that is negative or not finite.
func (w TierWeights) Validate() error {
	for t, x := range w {
		if !(x >= 0) || math.IsInf(x, 1) {
			return tensor.Errorf(tensor.ErrRange, "weights", tensor.At(t), "%s weight %v, want a finite number ≥ 0", Tier(t), x)
		}
	}
	return nil
}

func (w TierWeights) sum() float64 { return w[Easy] + w[Medium] + w[Hard] }

// Config configures a Buffer. The defaults are AVATAR's (§4.1, §4.4).
type Config struct {
	// Capacity is the number of experiences held: 10 000, where AVATAR's
	// buffer-size ablation (Fig. 11) peaks.
	Capacity int
	// Shares split both the capacity and the R̄ distribution among the
	// tiers: Easy 0.25, Medium 0.35, Hard 0.40. Each is > 0 and they sum
	// to 1. A tier holds share·Capacity experiences, rounded so that the
	// tiers add up to Capacity. An experience goes to Hard when its
	// prompt's position in the R̄ distribution (VCRS.Position) is below
	// Shares[Hard], to Medium below Shares[Hard] + Shares[Medium], else
	// to Easy.
	Shares TierWeights
	// Window is W of R̄(q): 20.
	Window int
	// MaxPrompts bounds the prompts the VCRS tracks (DefaultMaxPrompts);
	// the least recently updated is forgotten when a new one arrives.
	MaxPrompts int
	// MaxStaleness is η of AReaL's staleness control (AReaL, arXiv 2505.24298; 4 there):
	// an experience generated more than η policy versions before the
	// current one (Version < current − η) is dropped, on arrival or when
	// SetVersion moves on. 0, the default, turns the guard off (η = 0
	// would keep only the current policy's experiences: no replay at all).
	MaxStaleness int64
}

// DefaultConfig returns AVATAR's buffer: 10 000 experiences, Easy 25 %,
// Medium 35 %, Hard 40 %, W = 20, no staleness guard.
func DefaultConfig() Config {
	return Config{
		Capacity:   10000,
		Shares:     TierWeights{Easy: 0.25, Medium: 0.35, Hard: 0.40},
		Window:     DefaultWindow,
		MaxPrompts: DefaultMaxPrompts,
	}
}

// maxCapacity keeps snapshot sizes and ring indexes far from overflow.
const maxCapacity = 1 << 30

// Validate reports the first field of c that is out of its domain.
func (c Config) Validate() error {
	switch {
	case c == Config{}:
		return tensor.Errorf(tensor.ErrRange, "Config", nil, "the zero value (capacity 0); start from replay.DefaultConfig()")
	case c.Capacity < NumTiers || c.Capacity > maxCapacity:
		return tensor.Errorf(tensor.ErrRange, "Config.Capacity", nil, "%d, want %d..%d", c.Capacity, NumTiers, maxCapacity)
	case c.Window < 1 || c.Window > MaxWindow:
		return tensor.Errorf(tensor.ErrRange, "Config.Window", nil, "%d, want 1..%d", c.Window, MaxWindow)
	case c.MaxPrompts < 1 || c.MaxPrompts > math.MaxInt32:
		return tensor.Errorf(tensor.ErrRange, "Config.MaxPrompts", nil, "%d, want 1..%d", c.MaxPrompts, math.MaxInt32)
	case c.MaxStaleness < 0:
		return tensor.Errorf(tensor.ErrRange, "Config.MaxStaleness", nil, "%d, want ≥ 0 (0 is off)", c.MaxStaleness)
	}
	for t, s := range c.Shares {
		if !(s > 0 && s < 1) {
			return tensor.Errorf(tensor.ErrRange, "Config.Shares", tensor.At(t), "%s share %v, want a number in (0, 1)", Tier(t), s)
		}
	}
	if s := c.Shares.sum(); math.Abs(s-1) > 1e-12 {
		return tensor.Errorf(tensor.ErrRange, "Config.Shares", nil, "sum to %v, want 1", s)
	}
	for t, n := range c.capacities() {
		if n < 1 {
			return tensor.Errorf(tensor.ErrRange, "Config.Shares", tensor.At(t), "%s share %v of capacity %d holds no experience", Tier(t), c.Shares[t], c.Capacity)
		}
	}
	return nil
}

// capacities returns the size of each tier: share·Capacity rounded by the
// largest-remainder method, so that the sizes add up to Capacity, with ties
// going to the harder tier.
func (c Config) capacities() [NumTiers]int {
	var n [NumTiers]int
	var frac [NumTiers]float64
	left := c.Capacity
	for t, s := range c.Shares {
		x := s * float64(c.Capacity)
		n[t] = int(x)
		frac[t] = x - float64(n[t])
		left -= n[t]
	}
	for ; left > 0; left-- {
		best := Hard
		for _, t := range [...]Tier{Medium, Easy} {
			if frac[t] > frac[best] {
				best = t
			}
		}
		n[best]++
		frac[best] = -1
	}
	return n
}

// tier maps a position in the R̄ distribution to a tier.
func (c Config) tier(p float64) Tier {
	switch {
	case p < c.Shares[Hard]:
		return Hard
	case p < c.Shares[Hard]+c.Shares[Medium]:
		return Medium
	}
	return Easy
}

// Experience is one stored response: (q, o, π_θoff) of AVATAR §4.1 with its
// reward.
//
// The buffer keeps the slices it is given, without copying: they must not
// be modified after Add. Sample hands out the same slices, so readers must
// not modify them either.
type Experience struct {
	// Prompt identifies q. Callers with string ids hash them with a hash
	// that is stable across processes (FNV-1a, say), so that snapshots stay
	// meaningful.
	Prompt uint64
	// Tokens are the response's token ids; optional, opaque to the buffer.
	Tokens []int32
	// Logp are the behaviour policy's log-probabilities of the response
	// tokens the loss trains on, in order: log π_θoff of Eq. 4. Objective
	// lays them on the valid positions of the caller's mask row.
	Logp []float32
	// Reward is R(o), at most MaxAbsReward in magnitude.
	Reward float64
	// Version is the policy version that generated the response (≥ 0).
	Version int64
	// Payload is anything else the caller needs back (the prompt text, an
	// image reference); it is saved in snapshots.
	Payload []byte
}

// Limits on one experience, far above any real response, so that a
// snapshot's lengths can be checked.
const (
	maxTokens  = 1 << 26
	maxPayload = 1 << 30
)

// validate checks e, the i-th of a group (i < 0 for a lone experience).
// The name is built only for an error, so that Add does not allocate.
func (e *Experience) validate(i int) error {
	if err := e.check(); err != nil {
		name := "experience"
		if i >= 0 {
			name = fmt.Sprintf("experiences[%d]", i)
		}
		var ae *tensor.ArgError
		if errors.As(err, &ae) {
			ae.Arg = name + "." + ae.Arg
		}
		return err
	}
	return nil
}

func (e *Experience) check() error {
	if err := checkReward("reward", e.Reward); err != nil {
		return err
	}
	if e.Version < 0 {
		return tensor.Errorf(tensor.ErrRange, "version", nil, "%d, want ≥ 0", e.Version)
	}
	if len(e.Logp) == 0 {
		return tensor.Errorf(tensor.ErrEmpty, "logp", nil, "no token to train on")
	}
	if len(e.Logp) > maxTokens || len(e.Tokens) > maxTokens {
		return tensor.Errorf(tensor.ErrRange, "logp", nil, "%d log-probs and %d tokens, at most %d each", len(e.Logp), len(e.Tokens), maxTokens)
	}
	if len(e.Payload) > maxPayload {
		return tensor.Errorf(tensor.ErrRange, "payload", nil, "%d bytes, at most %d", len(e.Payload), maxPayload)
	}
	return tensor.CheckFiniteVec("logp", e.Logp)
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Receipt says what Add did with an experience.
type Receipt struct {
	// ID numbers every experience offered to the buffer, in order of
	// arrival; IDs are never reused.
	ID uint64
	// Tier is where the experience went (meaningless when Stale).
	Tier Tier
	// Stale is true when the experience was older than the staleness guard
	// allows and was dropped on arrival.
	Stale bool
}

// Sampled is an experience handed out by Sample.
type Sampled struct {
	Experience
	// ID is the experience's Receipt.ID.
	ID uint64
	// Tier is the tier it was stored in.
	Tier Tier
	// Age is the current policy version minus the experience's version.
	Age int64
	// Baseline is R̄(q) of Eq. 11: the prompt's current VCRS, or the value
	// it had when the experience was stored if the tracker has forgotten
	// the prompt since.
	Baseline float64
	// Fallback is true for an experience of another prompt drawn because
	// SampleOptions.Prompt had too few (see SampleOptions.NoFallback).
	Fallback bool
}

// DropReason says why an experience left the buffer.
type DropReason uint8

const (
	// Evicted: its tier was full and it was the tier's oldest.
	Evicted DropReason = iota
	// Expired: SetVersion made it stale.
	Expired
	// StaleOnArrival: it was stale when added and never stored.
	StaleOnArrival
)

var dropNames = [...]string{"evicted", "expired", "stale on arrival"}

func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", int(r))
}

// Dropped describes an experience that left the buffer or never entered it.
type Dropped struct {
	Experience
	ID     uint64
	Tier   Tier // the tier it left; Easy for StaleOnArrival
	Reason DropReason
}

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

// fifo is one tier: a ring of entries, oldest at head.
type fifo struct {
	ring    []entry
	head, n int
}

func (f *fifo) at(i int) *entry {
	j := f.head + i
	if j >= len(f.ring) {
		j -= len(f.ring)
	}
	return &f.ring[j]
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
		b.tiers[t].ring = make([]entry, n)
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
	}
	b.add(dst, es)
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
		obs[i] = observed{slot: s, mean: v.slots[s].mean}
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
		if v.slots[o.slot].id == e.Prompt {
			o.mean = v.slots[o.slot].mean
		} else {
			o.slot = v.slotOf(e.Prompt)
			if o.slot != none {
				o.mean = v.slots[o.slot].mean
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
	if f.n == len(f.ring) {
		old := f.at(0)
		b.c.evicted[t]++
		b.dropped(Dropped{Experience: old.Experience, ID: old.id, Tier: t, Reason: Evicted})
		*old = entry{}
		f.head++
		if f.head == len(f.ring) {
			f.head = 0
		}
		f.n--
	}
	*f.at(f.n) = e
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
				*f.at(kept) = *e
			}
			kept++
		}
		for i := kept; i < f.n; i++ {
			*f.at(i) = entry{}
		}
		f.n = kept
	}
	return nil
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
	if s := e.slot; s >= 0 && int(s) < len(v.slots) && v.slots[s].id == e.Prompt {
		return v.slots[s].mean
	}
	s := v.slotOf(e.Prompt)
	e.slot = s
	if s < 0 {
		return e.baseline
	}
	return v.slots[s].mean
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
		s.Len[t], s.Capacity[t] = b.tiers[t].n, len(b.tiers[t].ring)
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
