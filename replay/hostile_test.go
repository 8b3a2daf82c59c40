package replay_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/rlpost/rlpost/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hostile-file and concurrent-use tests of the replay buffer: what a
// corrupt snapshot, a snapshot taken under a storm of writes, and a reader
// and a writer of one path get.

// configEnd is where a format-2 snapshot's header checksum sits: after the
// header (20 bytes) and the configuration (52).
const configEnd = 20 + 52

// repairAll recomputes both checksums of a format-2 snapshot, so that the
// decoder behind them sees a bit flip as a valid file would be seen.
func repairAll(d []byte) {
	table := crc32.MakeTable(crc32.Castagnoli)
	if len(d) >= configEnd+4 {
		binary.LittleEndian.PutUint32(d[configEnd:], crc32.Checksum(d[:configEnd], table))
	}
	if len(d) >= 4 {
		binary.LittleEndian.PutUint32(d[len(d)-4:], crc32.Checksum(d[:len(d)-4], table))
	}
}

// TestEveryBitFlipIsSafe flips every bit of a snapshot, with and without
// repaired checksums: each restore gives an error wrapping ErrSnapshot or
// a working buffer, never a panic, and allocates no more than a small
// multiple of the snapshot's length — so no field, however corrupted, can
// make Restore allocate from it before checking it.
func TestEveryBitFlipIsSafe(t *testing.T) {
	good := snapshot(t, rich(t))
	budget := uint64(8*len(good) + 1<<20)
	var ms runtime.MemStats
	accepted := 0
	tried := 0
	for bit := 0; bit < 8*len(good); bit++ {
		// Every bit of the header, configuration, counters and first
		// prompts; then every seventh, so that the test stays quick under
		// the race detector.
		if bit >= 8*400 && bit%7 != 0 {
			continue
		}
		tried++
		for _, repair := range []bool{false, true} {
			d := bytes.Clone(good)
			d[bit/8] ^= 1 << (bit % 8)
			if repair {
				repairAll(d)
			}
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			b, err := replay.Restore(bytes.NewReader(d))
			runtime.ReadMemStats(&ms)
			if grew := ms.TotalAlloc - before; grew > budget {
				t.Fatalf("bit %d (repaired %v): restore allocated %d bytes for a %d-byte snapshot", bit, repair, grew, len(good))
			}
			if err != nil {
				require.ErrorIs(t, err, replay.ErrSnapshot, "bit %d (repaired %v)", bit, repair)
				require.Nil(t, b)
				continue
			}
			require.True(t, repair, "bit %d: a flip passed both checksums", bit)
			accepted++
			checkBuffer(t, b)
		}
	}
	t.Logf("%d of %d repaired flips decode to a consistent buffer (a flipped reward, say)", accepted, tried)
}

// TestHugeConfigurationCostsNothing: a snapshot whose configuration asks for
// the largest buffer the format allows — as a bit flip with a repaired
// checksum, or a hostile file, would — restores without allocating for it:
// the buffer's arrays grow with what it holds.
func TestHugeConfigurationCostsNothing(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.MaxPrompts = 1<<30, 1<<31-1 })
	add(t, b, exp(7, 1, 0))
	d := snapshot(t, b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	c, err := replay.Restore(bytes.NewReader(d))
	require.NoError(t, err)
	runtime.ReadMemStats(&ms)
	assert.Less(t, ms.TotalAlloc-before, uint64(1<<20), "restoring a one-experience buffer of capacity 2^30")
	assert.Equal(t, 1, c.Len())
}

// TestRestoreMaxBytes: a snapshot longer than RestoreOptions.MaxBytes is
// refused from its header; a negative bound is an argument error.
func TestRestoreMaxBytes(t *testing.T) {
	d := snapshot(t, rich(t))
	_, err := replay.RestoreWith(bytes.NewReader(d), replay.RestoreOptions{MaxBytes: int64(len(d) - 1)})
	require.ErrorIs(t, err, replay.ErrSnapshot)
	assert.Contains(t, err.Error(), "MaxBytes")
	b, err := replay.RestoreWith(bytes.NewReader(d), replay.RestoreOptions{MaxBytes: int64(len(d))})
	require.NoError(t, err)
	assert.Equal(t, rich(t).Len(), b.Len())
	_, err = replay.RestoreWith(bytes.NewReader(d), replay.RestoreOptions{MaxBytes: -1})
	require.Error(t, err)
	assert.NotErrorIs(t, err, replay.ErrSnapshot)
}

// gate is a writer whose first Write blocks until it is opened: Snapshot
// takes its state before it writes, so once the first Write arrives, the
// state is fixed and the test can change the buffer underneath.
type gate struct {
	buf    bytes.Buffer
	first  chan struct{}
	open   chan struct{}
	called bool
}

func (g *gate) Write(p []byte) (int, error) {
	if !g.called {
		g.called = true
		close(g.first)
		<-g.open
	}
	return g.buf.Write(p)
}

// TestSnapshotIsAPointInTime: a snapshot is the buffer as it was when the
// snapshot began, whatever Add, Observe, SetVersion and Sample do while it
// is written — the copy-on-write chunks keep its view unchanged.
func TestSnapshotIsAPointInTime(t *testing.T) {
	// Enough experiences and prompts for several chunks of each array.
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.MaxPrompts, c.MaxStaleness = 3*5000, 6000, 50 })
	require.NoError(t, b.SetVersion(5))
	for i := range 12000 {
		add(t, b, replay.Experience{Prompt: uint64(i % 5000), Logp: []float32{-float32(i%7) / 3}, Reward: float64(i%3) / 2, Version: int64(i / 2000)})
	}
	require.NoError(t, b.SetVersion(6))
	want := snapshot(t, b)

	g := &gate{first: make(chan struct{}), open: make(chan struct{})}
	done := make(chan error)
	go func() { done <- b.Snapshot(g) }()
	<-g.first
	// Rewrite everything the snapshot holds: every tier's ring (expiry,
	// then evictions), every prompt's slot and ring.
	require.NoError(t, b.SetVersion(70))
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				_, err := b.Add(replay.Experience{Prompt: uint64(w*7000 + i%7000), Logp: []float32{-1}, Reward: 1, Version: 70})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, b.SetVersion(100))
	for p := range uint64(5000) {
		require.NoError(t, b.Observe(p, -1))
	}
	close(g.open)
	require.NoError(t, <-done)
	require.Equal(t, want, g.buf.Bytes(), "the snapshot changed with the writes made while it was written")

	// And the buffer itself is the one the writes made: its own snapshot
	// restores and snapshots again to the same bytes.
	now := snapshot(t, b)
	c, err := replay.Restore(bytes.NewReader(now))
	require.NoError(t, err)
	require.Equal(t, now, snapshot(t, c))
	assert.NotEqual(t, want, now)
}

// TestReaderNeverBreaksWriter: one goroutine saves a path over and over
// while another loads it over and over (a trainer and a monitor): every save
// and every load succeeds.
func TestReaderNeverBreaksWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replay.snap")
	b := rich(t)
	require.NoError(t, b.SaveFile(path))
	const saves = 60
	stop := make(chan struct{})
	var loads, failedLoads int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := replay.LoadFile(path); err != nil {
				failedLoads++
				t.Errorf("load %d: %v", loads, err)
			}
			loads++
		}
	}()
	failedSaves := 0
	for i := range saves {
		require.NoError(t, b.SetVersion(int64(100+i)))
		if err := b.SaveFile(path); err != nil {
			failedSaves++
			t.Errorf("save %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d saves, %d loads beside them; failed: %d saves, %d loads", saves, loads, failedSaves, failedLoads)
	assert.Zero(t, failedSaves)
	assert.Zero(t, failedLoads)
	assert.Positive(t, loads)
}
