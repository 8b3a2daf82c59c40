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
			if _, err := b.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		b.SetVersion(step)
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
	if !reflect.DeepEqual(b.Stats(), c.Stats()) || b.Config() != c.Config() {
		t.Fatalf("stats or config differ:\n%+v\n%+v", b.Stats(), c.Stats())
	}
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
		if n1 != n2 || !reflect.DeepEqual(d1, d2) {
			t.Fatalf("draw %d differs", i)
		}
		e := exp(uint64(i%17), float64(i%3), 59)
		a1, _ := b.Add(e)
		a2, _ := c.Add(e)
		if a1 != a2 {
			t.Fatalf("add %d: %+v vs %+v", i, a1, a2)
		}
		p1, ok1 := b.Position(uint64(i % 17))
		p2, ok2 := c.Position(uint64(i % 17))
		if p1 != p2 || ok1 != ok2 {
			t.Fatalf("position of %d: %v vs %v", i%17, p1, p2)
		}
	}
	if !bytes.Equal(snapshot(t, b), snapshot(t, c)) {
		t.Fatal("the buffers diverged")
	}
}

func TestSnapshotEmpty(t *testing.T) {
	b := newBuffer(t, nil)
	c, err := replay.Restore(bytes.NewReader(snapshot(t, b)))
	if err != nil || c.Len() != 0 || c.Config() != replay.DefaultConfig() {
		t.Fatalf("%v, %v", c, err)
	}
}

// resum recomputes the checksum of a snapshot whose body was edited.
func resum(data []byte) {
	body := data[:len(data)-4]
	binary.LittleEndian.PutUint32(data[len(body):], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// TestSnapshotRejectsDamage: truncation, corruption, foreign data and
// inconsistent contents are errors that say what is wrong.
func TestSnapshotRejectsDamage(t *testing.T) {
	good := snapshot(t, rich(t))
	edit := func(f func([]byte) []byte) []byte { return f(bytes.Clone(good)) }
	// The first prompt record starts after header (20), config (52), state
	// (208) and the prompt count (8); its id is 8 bytes, its sum 8, then
	// comes its reward count (2).
	const firstPrompt = 20 + 52 + 208 + 8
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
		{"newer format", edit(func(d []byte) []byte { d[8] = 2; return d }), "format version 2"},
		{"bit flip in body", edit(func(d []byte) []byte { d[len(d)/3] ^= 0x10; return d }), "checksum mismatch"},
		{"bit flip in checksum", edit(func(d []byte) []byte { d[len(d)-1] ^= 1; return d }), "checksum mismatch"},
		{"inconsistent counter", edit(func(d []byte) []byte { d[20+52+16]++; resum(d); return d }), "offered"},
		{"window count 0", edit(func(d []byte) []byte {
			d[firstPrompt+16], d[firstPrompt+17] = 0, 0
			resum(d)
			return d
		}), "rewards at ring position"},
		{"capacity too small", edit(func(d []byte) []byte { binary.LittleEndian.PutUint64(d[20:], 2); resum(d); return d }), "configuration"},
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
		if _, err := replay.Restore(bytes.NewReader(good[:n])); !errors.Is(err, replay.ErrSnapshot) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
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
	if _, err := replay.Restore(failingReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("reader error: %v", err)
	}
	b := rich(t)
	for _, n := range []int{0, 100, len(snapshot(t, b)) - 2} {
		if err := b.Snapshot(&failingWriter{n: n}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("writer failing after %d bytes: %v", n, err)
		}
	}
}

func TestSaveAndLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "replay.snap")
	b := rich(t)
	require.NoError(t, b.SaveFile(path))
	b.Add(exp(1, 1, 59))
	if err := b.SaveFile(path); err != nil { // over the previous one
		t.Fatal(err)
	}
	c, err := replay.LoadFile(path)
	require.NoError(t, err)
	if !bytes.Equal(snapshot(t, b), snapshot(t, c)) {
		t.Error("loaded buffer differs")
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("files left: %v", names)
	}
	if err := b.SaveFile(filepath.Join(dir, "missing", "x.snap")); err == nil {
		t.Error("saved into a missing folder")
	}
	if _, err := replay.LoadFile(filepath.Join(dir, "none")); err == nil {
		t.Error("loaded a missing file")
	}
	os.WriteFile(filepath.Join(dir, "bad"), []byte("RLPRPLY\x00garbage"), 0o600)
	if _, err := replay.LoadFile(filepath.Join(dir, "bad")); !errors.Is(err, replay.ErrSnapshot) || !strings.Contains(err.Error(), "bad") {
		t.Errorf("bad file: %v", err)
	}
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
		if _, err := b.Add(replay.Experience{Prompt: uint64(i % 2500), Logp: logp, Reward: float64(i % 2)}); err != nil {
			t.Fatal(err)
		}
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
		if got.Len() != want.Len() || got.Stats().Offered != want.Stats().Offered {
			t.Fatalf("round %d: loaded %d experiences, want %d", round, got.Len(), want.Len())
		}
		versions = append(versions, got.Version())
		if tmp, _ := filepath.Glob(path + ".tmp-*"); len(tmp) > 0 {
			t.Fatalf("round %d: LoadFile left the killed save's temporary files %v", round, tmp)
		}
	}
	t.Logf("versions loaded after each kill: %v; %d of 6 kills interrupted a save", versions, torn)
}

// TestTempFilesCleanedOnNextOpen: the temporary files of a killed save of
// a path are removed by the next LoadFile or SaveFile of that path; other
// files are left alone.
func TestTempFilesCleanedOnNextOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "replay[1].snap") // a name with glob characters
	b := newBuffer(t, nil)
	add(t, b, exp(1, 1, 0))
	require.NoError(t, b.SaveFile(path))
	litter := func() []string {
		var names []string
		for _, n := range []string{path + ".tmp-123", path + ".tmp-456"} {
			require.NoError(t, os.WriteFile(n, []byte("half a snapshot"), 0o600))
			names = append(names, n)
		}
		return names
	}
	other := filepath.Join(dir, "other.snap.tmp-1")
	require.NoError(t, os.WriteFile(other, nil, 0o600))
	for _, open := range []func() error{
		func() error { _, err := replay.LoadFile(path); return err },
		func() error { return b.SaveFile(path) },
	} {
		names := litter()
		require.NoError(t, open())
		for _, n := range names {
			if _, err := os.Stat(n); !os.IsNotExist(err) {
				t.Errorf("%s survived: %v", n, err)
			}
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another path's temporary file was removed: %v", err)
	}
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
	if got.Len() != b.Len() || got.Stats() != b.Stats() {
		t.Errorf("restored %+v, want %+v", got.Stats(), b.Stats())
	}
	data := buf.Bytes()
	if _, err := replay.Restore(&oneByte{data[:len(data)-1]}); !errors.Is(err, replay.ErrSnapshot) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := replay.Restore(&oneByte{append(slices.Clone(data), 0)}); !errors.Is(err, replay.ErrSnapshot) {
		t.Errorf("trailing byte: %v", err)
	}
}
