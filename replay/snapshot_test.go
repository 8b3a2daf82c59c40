package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rich returns a buffer that exercises every part of the format: all tiers,
// evictions, expiries, forgotten prompts, hints, sampling statistics,
// tokens and payloads.
func rich(t testing.TB) *replay.Buffer {
	t.Helper()
	b := newBuffer(t, func(c *replay.Config) { c.Capacity, c.Window, c.MaxPrompts, c.MaxStaleness = 40, 3, 12, 10 })
	rng := rand.New(rand.NewPCG(21, 22))
	for step := range int64(60) {
		b.SetVersion(step)
		for range 5 {
			e := replay.Experience{
				Prompt:  uint64(rng.IntN(15)),
				Logp:    make([]float32, 1+rng.IntN(6)),
				Reward:  rng.NormFloat64(),
				Version: max(0, step-int64(rng.IntN(13))),
			}
			for i := range e.Logp {
				e.Logp[i] = -float32(rng.ExpFloat64())
			}
			if rng.IntN(2) == 0 {
				e.Tokens = []int32{int32(rng.Uint32()), -7}
			}
			if rng.IntN(3) == 0 {
				e.Payload = []byte("prompt text " + string(rune('a'+rng.IntN(26))))
			}
			_, err := b.Add(e)
			require.NoError(t, err)
		}
		b.Sample(make([]replay.Sampled, 3), rng, replay.SampleOptions{})
	}
	h, _ := replay.NewHinter(b, replay.HintConfig{Below: 10, MinRewards: 1, MaxKL: 1, MaxPerPrompt: 5},
		replay.HintFunc(func(context.Context, uint64) (string, error) { return "h", nil }))
	for _, e := range b.Entries(nil)[:3] {
		h.Hint(context.Background(), e.Prompt, 0)
	}
	st := b.Stats()
	if st.Forgotten == 0 || st.Hints == 0 || st.StaleOnArrival == 0 || st.Expired == [3]uint64{} || st.Evicted == [3]uint64{} {
		t.Fatalf("the rich buffer misses a feature: %+v", st)
	}
	return b
}

func snapshot(t testing.TB, b *replay.Buffer) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, b.Snapshot(&buf))
	return buf.Bytes()
}

// TestSnapshotRoundTrip: snapshot → restore → snapshot gives the same
// bytes, and the restored buffer behaves exactly like the original.
func TestSnapshotRoundTrip(t *testing.T) {
	b := rich(t)
	first := snapshot(t, b)
	c, err := replay.Restore(bytes.NewReader(first))
	require.NoError(t, err)
	if second := snapshot(t, c); !bytes.Equal(first, second) {
		t.Fatal("the restored buffer snapshots differently")
	}
	require.Equal(t, c.Stats(), b.Stats(), "stats or config differ")
	require.Equal(t, c.Config(), b.Config(), "stats or config differ")
	if !reflect.DeepEqual(b.Entries(nil), c.Entries(nil)) {
		t.Fatal("entries differ")
	}
	// The same future: samples, positions, placements and evictions.
	r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	d1, d2 := make([]replay.Sampled, 7), make([]replay.Sampled, 7)
	for i := range 20 {
		opt := replay.SampleOptions{Replace: i%2 == 1}
		n1, _ := b.Sample(d1, r1, opt)
		n2, _ := c.Sample(d2, r2, opt)
		require.Equal(t, n2, n1, "draw %d differs", i)
		require.Equal(t, d2, d1, "draw %d differs", i)
		e := exp(uint64(i%17), float64(i%3), 59)
		a1, _ := b.Add(e)
		a2, _ := c.Add(e)
		require.Equal(t, a2, a1, "add %d", i)
		p1, ok1 := b.Position(uint64(i % 17))
		p2, ok2 := c.Position(uint64(i % 17))
		require.Equal(t, p2, p1, "position of %d", i%17)
		require.Equal(t, ok2, ok1, "position of %d", i%17)
	}
	require.True(t, bytes.Equal(snapshot(t, b), snapshot(t, c)), "the buffers diverged")
}

func TestSnapshotEmpty(t *testing.T) {
	b := newBuffer(t, nil)
	c, err := replay.Restore(bytes.NewReader(snapshot(t, b)))
	require.NoError(t, err, "%v", c)
	require.Equal(t, 0, c.Len(), "%v", c)
	require.Equal(t, replay.DefaultConfig(), c.Config(), "%v", c)
}

// resum recomputes the checksum of a snapshot whose body was edited.
// resumHeader repairs the header checksum after the configuration.
func resumHeader(data []byte) {
	const n = 20 + 52
	binary.LittleEndian.PutUint32(data[n:], crc32.Checksum(data[:n], crc32.MakeTable(crc32.Castagnoli)))
}

func resum(data []byte) {
	body := data[:len(data)-4]
	binary.LittleEndian.PutUint32(data[len(body):], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// TestSnapshotRejectsDamage: truncation, corruption, foreign data and
// inconsistent contents are errors that say what is wrong.
func TestSnapshotRejectsDamage(t *testing.T) {
	good := snapshot(t, rich(t))
	edit := func(f func([]byte) []byte) []byte { return f(bytes.Clone(good)) }
	// The first prompt record starts after header (20), config (52), the
	// header checksum (4), state (208) and the prompt count (8); its id is
	// 8 bytes, its sum 8, then comes its reward count (2).
	const firstPrompt = 20 + 52 + 4 + 208 + 8
	for _, c := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"empty", nil, "not a replay snapshot"},
		{"foreign", []byte("{\"op\": \"policy_loss\"}"), "not a replay snapshot"},
		{"header only", good[:12], "truncated"},
		{"half", good[:len(good)/2], "truncated"},
		{"last byte missing", good[:len(good)-1], "truncated"},
		{"trailing data", append(bytes.Clone(good), 0), "after the end"},
		{"newer format", edit(func(d []byte) []byte { d[8] = 3; return d }), "format version 3"},
		{"bit flip in body", edit(func(d []byte) []byte { d[len(d)/3] ^= 0x10; return d }), "checksum mismatch"},
		{"bit flip in checksum", edit(func(d []byte) []byte { d[len(d)-1] ^= 1; return d }), "checksum mismatch"},
		{"inconsistent counter", edit(func(d []byte) []byte { d[20+52+4+16]++; resum(d); return d }), "offered"},
		{"bit flip in configuration", edit(func(d []byte) []byte { d[20+3] ^= 0x40; resum(d); return d }), "header checksum mismatch"},
		{"window count 0", edit(func(d []byte) []byte {
			d[firstPrompt+16], d[firstPrompt+17] = 0, 0
			resum(d)
			return d
		}), "rewards at ring position"},
		{"capacity too small", edit(func(d []byte) []byte {
			binary.LittleEndian.PutUint64(d[20:], 2)
			resumHeader(d)
			resum(d)
			return d
		}), "configuration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := replay.Restore(bytes.NewReader(c.data))
			if !errors.Is(err, replay.ErrSnapshot) || !strings.Contains(err.Error(), c.msg) || b != nil {
				t.Errorf("err = %v, want ErrSnapshot saying %q", err, c.msg)
			}
		})
	}
	// Every truncation is caught, wherever it falls.
	for n := 0; n < len(good); n += 1 + n/7 {
		_, err := replay.Restore(bytes.NewReader(good[:n]))
		require.ErrorIs(t, err, replay.ErrSnapshot, "truncated to %d bytes", n)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestSnapshotIOErrors(t *testing.T) {
	_, err := replay.Restore(failingReader{})
	require.Error(t, err, "reader error")
	assert.Contains(t, err.Error(), "disk on fire", "reader error")
	b := rich(t)
	for _, n := range []int{0, 100, len(snapshot(t, b)) - 2} {
		err := b.Snapshot(&failingWriter{n: n})
		require.Error(t, err, "writer failing after %d bytes", n)
		assert.Contains(t, err.Error(), "disk full", "writer failing after %d bytes", n)
	}
}

func TestSaveAndLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "replay.snap")
	b := rich(t)
	require.NoError(t, b.SaveFile(path))
	b.Add(exp(1, 1, 59))
	require.NoError(t, b.SaveFile(path)) // over the previous one
	c, err := replay.LoadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(snapshot(t, b), snapshot(t, c)), "loaded buffer differs")
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("files left: %v", names)
	}
	assert.Error(t, b.SaveFile(filepath.Join(dir, "missing", "x.snap")), "saved into a missing folder")
	_, err = replay.LoadFile(filepath.Join(dir, "none"))
	assert.Error(t, err, "loaded a missing file")
	os.WriteFile(filepath.Join(dir, "bad"), []byte("RLPRPLY\x00garbage"), 0o600)
	_, err = replay.LoadFile(filepath.Join(dir, "bad"))
	require.ErrorIs(t, err, replay.ErrSnapshot, "bad file")
	assert.Contains(t, err.Error(), "bad", "bad file")
}

const saveLoopEnv = "RLPOST_REPLAY_SAVE_LOOP"

// large returns a deterministic buffer of about 10 MB of snapshot.
func large(t testing.TB) *replay.Buffer {
	b := newBuffer(t, nil)
	rng := rand.New(rand.NewPCG(31, 32))
	logp := make([]float32, 256)
	for i := range logp {
		logp[i] = -float32(rng.ExpFloat64())
	}
	for i := range 10000 {
		_, err := b.Add(replay.Experience{Prompt: uint64(i % 2500), Logp: logp, Reward: float64(i % 2)})
		require.NoError(t, err)
	}
	return b
}

// TestSaveFileSurvivesKill re-runs this test binary as a child that saves a
// large buffer over and over, kills it with SIGKILL at a random moment,
// and checks that the file still loads, several times.
func TestSaveFileSurvivesKill(t *testing.T) {
	if path := os.Getenv(saveLoopEnv); path != "" {
		b := large(t)
		os.Stdout.WriteString("saving\n")
		for v := int64(1); ; v++ {
			b.SetVersion(v)
			require.NoError(t, b.SaveFile(path))
		}
	}
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "replay.snap")
	want := large(t)
	require.NoError(t, want.SaveFile(path))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var versions []int64
	torn := 0
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSaveFileSurvivesKill$", "-test.count=1")
		cmd.Env = append(os.Environ(), saveLoopEnv+"="+path)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "saving\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child said %q, %v", round, line, err)
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		tmp, _ := filepath.Glob(path + ".tmp-*")
		if len(tmp) > 0 {
			torn++
		}
		got, err := replay.LoadFile(path)
		require.NoError(t, err, "round %d: the file does not load after a kill", round)
		require.Equal(t, want.Len(), got.Len(), "round %d: loaded experiences", round)
		require.Equal(t, want.Stats().Offered, got.Stats().Offered, "round %d: loaded experiences", round)
		versions = append(versions, got.Version())
	}
	// The killed saves' temporary files are left to a later save, which
	// removes them once they are older than TempGrace.
	tmp, _ := filepath.Glob(path + ".tmp-*")
	long := time.Now().Add(-replay.TempGrace - time.Minute)
	for _, n := range tmp {
		require.NoError(t, os.Chtimes(n, long, long))
	}
	require.NoError(t, want.SaveFile(path))
	tmp, _ = filepath.Glob(path + ".tmp-*")
	require.Empty(t, tmp, "the killed saves' temporary files survived a later save")
	t.Logf("versions loaded after each kill: %v; %d of 6 kills interrupted a save", versions, torn)
}

// TestStaleTempFilesRemovedBySave: the temporary files of a killed save of
// a path are removed by a later SaveFile of that path once they are older
// than TempGrace; fresh ones (a save in progress) and other paths' files
// are left alone, and LoadFile removes nothing.
func TestStaleTempFilesRemovedBySave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "replay[1].snap") // a name with glob characters
	b := newBuffer(t, nil)
	add(t, b, exp(1, 1, 0))
	require.NoError(t, b.SaveFile(path))
	old, fresh := path+".tmp-123", path+".tmp-456"
	other := filepath.Join(dir, "other.snap.tmp-1")
	for _, n := range []string{old, fresh, other} {
		require.NoError(t, os.WriteFile(n, []byte("half a snapshot"), 0o600))
	}
	long := time.Now().Add(-replay.TempGrace - time.Minute)
	require.NoError(t, os.Chtimes(old, long, long))
	require.NoError(t, os.Chtimes(other, long, long))

	_, err := replay.LoadFile(path)
	require.NoError(t, err)
	for _, n := range []string{old, fresh, other} {
		assert.FileExists(t, n, "LoadFile removed a file")
	}
	require.NoError(t, b.SaveFile(path))
	assert.NoFileExists(t, old, "a killed save's old temporary file survived SaveFile")
	assert.FileExists(t, fresh, "SaveFile removed a temporary file a live save may be writing")
	assert.FileExists(t, other, "SaveFile removed another path's temporary file")
}

// oneByte hands out its data a byte per Read, as a slow pipe would.
type oneByte struct{ p []byte }

func (r *oneByte) Read(p []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], r.p = r.p[0], r.p[1:]
	return 1, nil
}

// TestRestoreStreams: Restore decodes from a reader that yields a byte at
// a time, and still rejects a truncated stream and trailing bytes.
func TestRestoreStreams(t *testing.T) {
	b := newBuffer(t, func(c *replay.Config) { c.Capacity = 30 })
	for p := range uint64(20) {
		add(t, b, exp(p, float64(p%2), 0))
	}
	var buf bytes.Buffer
	require.NoError(t, b.Snapshot(&buf))
	got, err := replay.Restore(&oneByte{buf.Bytes()})
	require.NoError(t, err)
	assert.Equal(t, b.Len(), got.Len(), "restored")
	assert.Equal(t, b.Stats(), got.Stats(), "restored")
	data := buf.Bytes()
	_, err = replay.Restore(&oneByte{data[:len(data)-1]})
	assert.ErrorIs(t, err, replay.ErrSnapshot, "truncated")
	_, err = replay.Restore(&oneByte{append(slices.Clone(data), 0)})
	assert.ErrorIs(t, err, replay.ErrSnapshot, "trailing byte")
}
