package replay_test

import (
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlpost/rlpost/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stressDuration is 1 s, or $RLPOST_REPLAY_STRESS (a Go duration) for
// longer runs.
func stressDuration(t *testing.T) time.Duration {
	if s := os.Getenv("RLPOST_REPLAY_STRESS"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "RLPOST_REPLAY_STRESS")
		return d
	}
	return time.Second
}

// TestConcurrentAccounting runs 8 rollout workers adding (alone and in
// groups, some of them late enough to be stale), 2 trainers sampling with
// and without replacement along a curriculum, a version clock with η = 4,
// and a checkpointer taking snapshots, all at once. At the end every
// experience ever offered is accounted for exactly once: held, evicted by
// its tier's FIFO rule, or dropped as stale.
func TestConcurrentAccounting(t *testing.T) {
	const (
		writers  = 8
		samplers = 2
		eta      = 4
	)
	d := stressDuration(t)
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.MaxStaleness, c.MaxPrompts = 2000, eta, 400 })
	var evicted, expired, arrival [replay.NumTiers + 1][]uint64
	b.SetDropFunc(func(x replay.Dropped) { // runs under the buffer's lock
		switch x.Reason {
		case replay.Evicted:
			evicted[x.Tier] = append(evicted[x.Tier], x.ID)
		case replay.Expired:
			expired[x.Tier] = append(expired[x.Tier], x.ID)
		default:
			arrival[0] = append(arrival[0], x.ID)
		}
	})
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	receipts := make([][]replay.Receipt, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			group := make([]replay.Experience, 4)
			rs := make([]replay.Receipt, 4)
			for time.Now().Before(deadline) {
				v := max(0, b.Version()-int64(rng.IntN(eta+3)))
				p := uint64(rng.IntN(500))
				if rng.IntN(2) == 0 {
					r, err := b.Add(exp(p, float64(rng.IntN(2)), v))
					if err != nil {
						t.Error(err)
						return
					}
					receipts[w] = append(receipts[w], r)
					continue
				}
				for i := range group {
					group[i] = exp(p, float64(rng.IntN(2)), v)
				}
				if err := b.AddGroup(rs, group); err != nil {
					t.Error(err)
					return
				}
				receipts[w] = append(receipts[w], rs...)
			}
		}()
	}
	sampled := make([]int, samplers)
	for s := range samplers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 2))
			dst := make([]replay.Sampled, 8)
			start := time.Now()
			for time.Now().Before(deadline) {
				w, err := replay.DefaultCurriculum().Weights(float64(time.Since(start)) / float64(d))
				if err != nil {
					t.Error(err)
					return
				}
				replace := rng.IntN(2) == 0
				n, err := b.Sample(dst, rng, replay.SampleOptions{Weights: w, Replace: replace})
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[uint64]bool{}
				for _, x := range dst[:n] {
					if !replace && seen[x.ID] {
						t.Errorf("experience %d drawn twice without replacement", x.ID)
					}
					assert.LessOrEqual(t, x.Age, int64(eta), "experience %d sampled older than η", x.ID)
					seen[x.ID] = true
				}
				sampled[s] += n
			}
		}()
	}
	wg.Add(2)
	go func() { // the trainer's clock
		defer wg.Done()
		for v := int64(1); time.Now().Before(deadline); v++ {
			assert.NoError(t, b.SetVersion(v))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	go func() { // checkpoints
		defer wg.Done()
		for time.Now().Before(deadline) {
			assert.NoError(t, b.Snapshot(io.Discard))
			b.Stats()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}

	st := b.Stats()
	state := map[uint64]string{}
	put := func(id uint64, where string) {
		if prev, dup := state[id]; dup {
			t.Fatalf("experience %d is both %s and %s", id, prev, where)
		}
		state[id] = where
	}
	held := b.Entries(nil)
	for _, x := range held {
		put(x.ID, "held")
	}
	for tier := range replay.NumTiers {
		for _, id := range evicted[tier] {
			put(id, "evicted")
		}
		for _, id := range expired[tier] {
			put(id, "expired")
		}
		// FIFO: evictions leave a tier in arrival order, and everything
		// still held in it arrived after the last of them.
		assert.True(t, slices.IsSorted(evicted[tier]), "%v tier evicted out of order", replay.Tier(tier))
		if n := len(evicted[tier]); n > 0 {
			for _, x := range held {
				if x.Tier == replay.Tier(tier) && x.ID < evicted[tier][n-1] {
					t.Errorf("%v tier holds %d, older than evicted %d", x.Tier, x.ID, evicted[tier][n-1])
				}
			}
		}
		if uint64(len(evicted[tier])) != st.Evicted[tier] || uint64(len(expired[tier])) != st.Expired[tier] {
			t.Errorf("%v tier: counters %d evicted %d expired, drop function saw %d and %d",
				replay.Tier(tier), st.Evicted[tier], st.Expired[tier], len(evicted[tier]), len(expired[tier]))
		}
	}
	for _, id := range arrival[0] {
		put(id, "stale on arrival")
	}
	offered := 0
	for _, rs := range receipts {
		for _, r := range rs {
			offered++
			where, ok := state[r.ID]
			switch {
			case !ok:
				t.Fatalf("experience %d was lost", r.ID)
			case r.Stale != (where == "stale on arrival"):
				t.Fatalf("experience %d: receipt says stale = %v, but it was %s", r.ID, r.Stale, where)
			}
		}
	}
	require.Equal(t, len(state), offered, "receipts experiences accounted for offered")
	require.Equal(t, st.Offered, uint64(offered), "receipts experiences accounted for offered")
	for id := range uint64(offered) {
		if _, ok := state[id]; !ok {
			t.Fatalf("id %d never issued", id)
		}
	}
	t.Logf("%v: %d offered, %d held, evicted %v, expired %v, %d stale on arrival, %d versions, %v sampled",
		d, offered, len(held), st.Evicted, st.Expired, st.StaleOnArrival, st.Version, sampled)
}
