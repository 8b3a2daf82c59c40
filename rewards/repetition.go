package rewards

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/rlpost/rlpost/tensor"
)

// RepetitionConfig configures VAGEN's repetition penalty ("VAGEN",
// Appendix D.1.2): a response whose sentence is one of the most frequent
// sentences of the agent's history and whose structured F1 is below a
// correctness threshold is "blindly repeating an incorrect answer" and
// gets a penalty. The zero value is not valid; start from
// VAGENRepetitionConfig.
type RepetitionConfig struct {
	// TopK is how many of the most frequent past sentences the max-heap
	// holds (the "top frequent sentences" a response is matched against).
	// VAGEN does not give the heap's size; rlpost uses 10. While fewer than
	// TopK distinct sentences are recorded, all of them are in the heap.
	TopK int
	// Threshold is the F1 below which a repeated sentence is penalised;
	// 0.7 in VAGEN's Sokoban runs.
	Threshold float64
	// Penalty is subtracted from the reward of a penalised response; 0.1
	// ("a penalty of -0.1 was applied to the reward").
	Penalty float64
	// MaxSentences bounds the distinct sentences remembered; past it the
	// least frequent are forgotten. VAGEN keeps the whole history; rlpost
	// bounds memory at 65536 sentences, far more than a top-10 needs.
	MaxSentences int
}

// VAGENRepetitionConfig returns VAGEN's values (threshold 0.7, penalty
// 0.1) and rlpost's for what the paper leaves open (TopK 10, 65536
// sentences).
func VAGENRepetitionConfig() RepetitionConfig {
	return RepetitionConfig{TopK: 10, Threshold: 0.7, Penalty: 0.1, MaxSentences: 1 << 16}
}

// Validate reports the first field of c that is out of its domain.
func (c RepetitionConfig) Validate() error {
	switch {
	case c.TopK < 1:
		return tensor.Errorf(tensor.ErrRange, "RepetitionConfig.TopK", nil, "%d, want ≥ 1; start from VAGENRepetitionConfig", c.TopK)
	case !(c.Threshold >= 0 && c.Threshold <= 1):
		return tensor.Errorf(tensor.ErrRange, "RepetitionConfig.Threshold", nil, "%v, want a number in [0, 1]", c.Threshold)
	case !(c.Penalty >= 0) || math.IsInf(c.Penalty, 1):
		return tensor.Errorf(tensor.ErrRange, "RepetitionConfig.Penalty", nil, "%v, want a finite number ≥ 0 (it is subtracted)", c.Penalty)
	case c.MaxSentences < c.TopK:
		return tensor.Errorf(tensor.ErrRange, "RepetitionConfig.MaxSentences", nil, "%d, want ≥ TopK = %d", c.MaxSentences, c.TopK)
	}
	return nil
}

// maxSentenceKey bounds the bytes of a remembered sentence; a longer one
// is remembered by its first bytes and a hash of the whole.
const maxSentenceKey = 1024

// SentenceKey is the form in which a sentence is compared and remembered:
// case folded, white space collapsed, and past 1024 bytes cut and suffixed
// with a hash of the whole normalised sentence.
func SentenceKey(s string) string {
	k := strings.ToLower(strings.Join(strings.Fields(s), " "))
	if len(k) <= maxSentenceKey {
		return k
	}
	h := fnv.New64a()
	h.Write([]byte(k))
	return fmt.Sprintf("%s…#%016x", k[:maxSentenceKey], h.Sum64())
}

// SentenceCount is one remembered sentence and how often it was recorded.
type SentenceCount struct {
	Sentence string `json:"sentence"`
	Count    int64  `json:"count"`
}

// RepetitionTracker is the state of VAGEN's repetition penalty: how often
// the agent produced each sentence, and the max-heap of the TopK most
// frequent. The trainer owns it, for as long as it trains (a step's
// penalties depend on every earlier step), and saves it with its
// checkpoint (Snapshot, RestoreRepetitionTracker).
//
// Scoring reads the state and recording changes it, in two phases so that
// a batch scored concurrently gets the same penalties whatever the order:
// score every response of a step with Penalty, from any number of
// goroutines, then Record the step's sentences once. A response is thus
// compared with the history before its own step. Methods are safe for
// concurrent use.
type RepetitionTracker struct {
	cfg    RepetitionConfig
	mu     sync.RWMutex
	counts map[string]int64
	top    map[string]int64 // the TopK most frequent
}

// NewRepetitionTracker returns an empty tracker.
func NewRepetitionTracker(cfg RepetitionConfig) (*RepetitionTracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rewards: %w", err)
	}
	return &RepetitionTracker{cfg: cfg, counts: make(map[string]int64), top: make(map[string]int64)}, nil
}

// Config returns the tracker's configuration.
func (t *RepetitionTracker) Config() RepetitionConfig { return t.cfg }

// Penalty returns the penalty of a response whose sentence is sentence and
// whose structured F1 is f1: −Penalty when the sentence is among the TopK
// most frequent recorded sentences and f1 < Threshold (both conditions,
// as VAGEN requires), else 0; repeated reports the first condition alone.
// f1 must be a number in [0, 1]. It does not record the sentence.
func (t *RepetitionTracker) Penalty(sentence string, f1 float64) (penalty float64, repeated bool, err error) {
	if !(f1 >= 0 && f1 <= 1) {
		return 0, false, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "f1", nil, "%v, want a number in [0, 1]", f1))
	}
	k := SentenceKey(sentence)
	t.mu.RLock()
	_, repeated = t.top[k]
	t.mu.RUnlock()
	if repeated && f1 < t.cfg.Threshold {
		return -t.cfg.Penalty, true, nil
	}
	return 0, repeated, nil
}

// Record adds one occurrence of each sentence to the history and updates
// the max-heap of the most frequent. Blank sentences are not recorded.
func (t *RepetitionTracker) Record(sentences ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range sentences {
		if k := SentenceKey(s); k != "" {
			t.counts[k]++
		}
	}
	if len(t.counts) > t.cfg.MaxSentences {
		t.forget()
	}
	t.rebuildTop()
}

// Top returns the TopK most frequent sentences, most frequent first (ties
// in byte order of the sentence).
func (t *RepetitionTracker) Top() []SentenceCount {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]SentenceCount, 0, len(t.top))
	for s, n := range t.top {
		out = append(out, SentenceCount{s, n})
	}
	slices.SortFunc(out, byFrequency)
	return out
}

// Len returns the number of distinct sentences remembered.
func (t *RepetitionTracker) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.counts)
}

// byFrequency orders by count, descending, then by sentence.
func byFrequency(a, b SentenceCount) int {
	if c := cmp.Compare(b.Count, a.Count); c != 0 {
		return c
	}
	return strings.Compare(a.Sentence, b.Sentence)
}

// forget drops the least frequent sentences down to three quarters of
// MaxSentences, so that the sort is paid once per many new sentences.
func (t *RepetitionTracker) forget() {
	all := make([]SentenceCount, 0, len(t.counts))
	for s, n := range t.counts {
		all = append(all, SentenceCount{s, n})
	}
	slices.SortFunc(all, byFrequency)
	keep := max(t.cfg.MaxSentences*3/4, t.cfg.TopK)
	for _, sc := range all[keep:] {
		delete(t.counts, sc.Sentence)
	}
}

// minHeap keeps the TopK most frequent sentences seen so far, its root
// the least frequent of them: the max-heap's top K, found in O(n log K).
type minHeap []SentenceCount

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return byFrequency(h[i], h[j]) > 0 }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(SentenceCount)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (t *RepetitionTracker) rebuildTop() {
	h := make(minHeap, 0, t.cfg.TopK+1)
	for s, n := range t.counts {
		sc := SentenceCount{s, n}
		if len(h) < t.cfg.TopK {
			heap.Push(&h, sc)
		} else if byFrequency(sc, h[0]) < 0 {
			h[0] = sc
			heap.Fix(&h, 0)
		}
	}
	clear(t.top)
	for _, sc := range h {
		t.top[sc.Sentence] = sc.Count
	}
}

// ErrRepetitionSnapshot is wrapped by RestoreRepetitionTracker's errors
// about the snapshot's contents.
var ErrRepetitionSnapshot = errors.New("invalid repetition snapshot")

const repetitionFormat = "rlpost.repetition/1"

type repetitionSnapshot struct {
	Format string           `json:"format"`
	Config RepetitionConfig `json:"config"`
	Counts []SentenceCount  `json:"counts"`
}

// Snapshot writes the tracker's configuration and history to w as one
// JSON document (format "rlpost.repetition/1", sentences most frequent
// first), consistent even while other goroutines score and record.
func (t *RepetitionTracker) Snapshot(w io.Writer) error {
	t.mu.RLock()
	snap := repetitionSnapshot{Format: repetitionFormat, Config: t.cfg, Counts: make([]SentenceCount, 0, len(t.counts))}
	for s, n := range t.counts {
		snap.Counts = append(snap.Counts, SentenceCount{s, n})
	}
	t.mu.RUnlock()
	slices.SortFunc(snap.Counts, byFrequency)
	if err := json.NewEncoder(w).Encode(&snap); err != nil {
		return fmt.Errorf("rewards: writing the repetition snapshot: %w", err)
	}
	return nil
}

// RestoreRepetitionTracker reads a tracker written by Snapshot. A document
// of another format, an invalid configuration, a count < 1, a sentence not
// in SentenceKey form, a repeated sentence or more sentences than
// MaxSentences is an error wrapping ErrRepetitionSnapshot.
func RestoreRepetitionTracker(r io.Reader) (*RepetitionTracker, error) {
	var snap repetitionSnapshot
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	if err := d.Decode(&snap); err != nil {
		return nil, fmt.Errorf("rewards: %w: %v", ErrRepetitionSnapshot, err)
	}
	if snap.Format != repetitionFormat {
		return nil, fmt.Errorf("rewards: %w: format %q, want %q", ErrRepetitionSnapshot, snap.Format, repetitionFormat)
	}
	t, err := NewRepetitionTracker(snap.Config)
	if err != nil {
		return nil, fmt.Errorf("rewards: %w: %w", ErrRepetitionSnapshot, err)
	}
	if len(snap.Counts) > snap.Config.MaxSentences {
		return nil, fmt.Errorf("rewards: %w: %d sentences, MaxSentences %d", ErrRepetitionSnapshot, len(snap.Counts), snap.Config.MaxSentences)
	}
	for i, sc := range snap.Counts {
		switch {
		case sc.Count < 1:
			return nil, fmt.Errorf("rewards: %w: counts[%d]: count %d, want ≥ 1", ErrRepetitionSnapshot, i, sc.Count)
		case sc.Sentence == "" || len(sc.Sentence) <= maxSentenceKey && SentenceKey(sc.Sentence) != sc.Sentence:
			return nil, fmt.Errorf("rewards: %w: counts[%d]: sentence not in normalised form", ErrRepetitionSnapshot, i)
		}
		if _, dup := t.counts[sc.Sentence]; dup {
			return nil, fmt.Errorf("rewards: %w: counts[%d]: sentence repeated", ErrRepetitionSnapshot, i)
		}
		t.counts[sc.Sentence] = sc.Count
	}
	t.rebuildTop()
	return t, nil
}
