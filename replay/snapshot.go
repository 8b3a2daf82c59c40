package replay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/rlpost/rlpost/tensor"
)

// ErrSnapshot is wrapped by every error about the contents of a snapshot:
// not one, a format this build does not read, truncated, corrupted or
// inconsistent.
var ErrSnapshot = errors.New("invalid replay snapshot")

// The snapshot format, version 2. Every number is little-endian; floats
// are their IEEE 754 bits, so a round trip is exact.
//
//	magic "RLPRPLY\x00" · format u32 · total length u64
//	config:   capacity u64 · shares 3×f64 · window u32 · max prompts u64 · max staleness i64
//	CRC-32C u32 of everything before it (header and config)
//	state:    version i64 · next id u64 · offered u64 · inserted 3×u64 · evicted 3×u64 ·
//	          expired 3×u64 · stale on arrival u64 · sampled u64 · age sum u64 · max age i64 ·
//	          age histogram 8×u64 · hints u64 · forgotten prompts u64
//	vcrs:     n u64, then per prompt, least recently updated first:
//	          id u64 · sum f64 · count u16 · ring position u16 · hints u16 · ring W×f64
//	tiers:    Easy, Medium, Hard: n u64, then per experience, oldest first:
//	          id u64 · prompt u64 · version i64 · reward f64 · baseline f64 ·
//	          n u32 · logp n×f32 · n u32 · tokens n×i32 · n u32 · payload n bytes
//	CRC-32C (Castagnoli) u32 of everything before it
//
// The header's own checksum lets Restore trust the length and the
// configuration before it sizes anything from them; the trailer's covers
// the rest, which is checked against the length as it streams. Version 1,
// the same without the header checksum, is still read.
const (
	snapshotMagic  = "RLPRPLY\x00"
	snapshotFormat = 2
	headerLen      = 8 + 4 + 8
	configLen      = 8 + 3*8 + 4 + 8 + 8
	headerSumLen   = 4
	trailerLen     = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// state is a buffer's contents as a snapshot sees them. It is taken under
// the buffer's lock in time independent of the buffer's size: the scalar
// fields are copied, and the chunked arrays — the VCRS slots and rings,
// the tiers' rings — are shared (chunked.share copies one pointer per
// 4 096 items), so that walking the prompts in order and encoding run
// without the lock while Add and Sample go on, copying a chunk before
// they write to one the snapshot holds. Experiences' slices are shared
// too: the buffer never modifies them. release must follow.
type state struct {
	cfg       Config
	version   int64
	nextID    uint64
	c         counters
	forgotten uint64
	prompts   int
	oldest    int32
	slots     chunked[slot]
	rings     chunked[float64]
	tiers     [NumTiers]fifo
}

func (b *Buffer) state() *state {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.vcrs
	s := &state{cfg: b.cfg, version: b.version, nextID: b.nextID, c: b.c, forgotten: v.forgotten,
		prompts: len(v.index), oldest: v.oldest, slots: v.slots.share(), rings: v.rings.share()}
	for t := range b.tiers {
		s.tiers[t] = b.tiers[t]
		s.tiers[t].ring = b.tiers[t].ring.share()
	}
	return s
}

// release ends the sharing state began.
func (b *Buffer) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.vcrs.slots.release()
	b.vcrs.rings.release()
	for t := range b.tiers {
		b.tiers[t].ring.release()
	}
}

// size returns the encoded length of s.
func (s *state) size() uint64 {
	n := uint64(headerLen + configLen + headerSumLen + trailerLen)
	n += 8 + 8 + 8 + 3*3*8 + 8 + 8 + 8 + 8 + 8*8 + 16 // state
	n += 8 + uint64(s.prompts)*(8+8+2+2+2+uint64(s.cfg.Window)*8)
	for t := range s.tiers {
		n += 8
		f := &s.tiers[t]
		for i := range f.n {
			e := f.at(i)
			n += 5*8 + 3*4 + 4*uint64(len(e.Logp)) + 4*uint64(len(e.Tokens)) + uint64(len(e.Payload))
		}
	}
	return n
}

// Snapshot writes the buffer — configuration, VCRS, experiences, counters
// and policy version — to w in the versioned, checksummed format above.
// The buffer is locked only while its state is copied (the experiences'
// slices are shared, not copied); Add and Sample go on while it encodes.
// The drop function is not saved.
func (b *Buffer) Snapshot(w io.Writer) error {
	if w == nil {
		return fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrEmpty, "w", nil, "nil writer"))
	}
	s := b.state()
	defer b.release()
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	e := encoder{w: bw}
	e.bytes([]byte(snapshotMagic))
	e.u32(snapshotFormat)
	e.u64(s.size())
	s.encodeConfig(&e)
	// The header checksum: the CRC of what was written so far, which the
	// trailer's CRC then also covers.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("replay: snapshot: %w", err)
	}
	e.u32(crc.Sum32())
	s.encode(&e)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("replay: snapshot: %w", err)
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return fmt.Errorf("replay: snapshot: %w", err)
	}
	return nil
}

func (s *state) encodeConfig(e *encoder) {
	c := &s.cfg
	e.u64(uint64(c.Capacity))
	for _, x := range c.Shares {
		e.f64(x)
	}
	e.u32(uint32(c.Window))
	e.u64(uint64(c.MaxPrompts))
	e.u64(uint64(c.MaxStaleness))
}

func (s *state) encode(e *encoder) {

	k := &s.c
	e.u64(uint64(s.version))
	e.u64(s.nextID)
	e.u64(k.offered)
	for _, a := range [...]*[NumTiers]uint64{&k.inserted, &k.evicted, &k.expired} {
		for _, x := range a {
			e.u64(x)
		}
	}
	e.u64(k.arrival)
	e.u64(k.sampled)
	e.u64(k.ageSum)
	e.u64(uint64(k.ageMax))
	for _, x := range k.ageHist {
		e.u64(x)
	}
	e.u64(k.hints)
	e.u64(s.forgotten)

	e.u64(uint64(s.prompts))
	for i := s.oldest; i != none; i = s.slots.at(int(i)).newer {
		p := s.slots.at(int(i))
		e.u64(p.id)
		e.f64(p.sum)
		e.u16(p.n)
		e.u16(p.pos)
		e.u16(p.hints)
		for _, r := range s.rings.item(int(i)) {
			e.f64(r)
		}
	}
	for t := range s.tiers {
		f := &s.tiers[t]
		e.u64(uint64(f.n))
		for i := range f.n {
			x := f.at(i)
			e.u64(x.id)
			e.u64(x.Prompt)
			e.u64(uint64(x.Version))
			e.f64(x.Reward)
			e.f64(x.baseline)
			e.u32(uint32(len(x.Logp)))
			for _, v := range x.Logp {
				e.u32(math.Float32bits(v))
			}
			e.u32(uint32(len(x.Tokens)))
			for _, v := range x.Tokens {
				e.u32(uint32(v))
			}
			e.u32(uint32(len(x.Payload)))
			e.bytes(x.Payload)
		}
	}
}

// encoder appends little-endian numbers to a bufio.Writer's free space.
// Write errors are sticky in the bufio.Writer and surface at Flush.
type encoder struct{ w *bufio.Writer }

func (e encoder) u16(v uint16) { e.w.Write(binary.LittleEndian.AppendUint16(e.w.AvailableBuffer(), v)) }
func (e encoder) u32(v uint32) { e.w.Write(binary.LittleEndian.AppendUint32(e.w.AvailableBuffer(), v)) }
func (e encoder) u64(v uint64) { e.w.Write(binary.LittleEndian.AppendUint64(e.w.AvailableBuffer(), v)) }
func (e encoder) f64(v float64) {
	e.w.Write(binary.LittleEndian.AppendUint64(e.w.AvailableBuffer(), math.Float64bits(v)))
}
func (e encoder) bytes(p []byte) { e.w.Write(p) }

// SaveFile writes a snapshot to path atomically: to a temporary file in the
// same folder with a name of its own ("path.tmp-<random>"), synced to disk,
// then renamed over path, and the folder synced. A crash at any moment
// leaves either the previous file or the new one, never a mix, and saves
// running at once (from several processes) each rename a whole file of
// their own. A save killed mid-way leaves its temporary file behind;
// LoadFile never reads or removes it, and a later SaveFile of the same path
// removes those untouched for TempGrace — longer than any live save goes
// without writing — so that a reader can never break a writer. The file is
// readable by its owner only.
func (b *Buffer) SaveFile(path string) (err error) {
	removeStaleTemps(path, time.Now().Add(-TempGrace))
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".tmp-*")
	if err != nil {
		return fmt.Errorf("replay: save: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := b.Snapshot(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("replay: save: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("replay: save: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replay: save: %w", err)
	}
	// The rename is durable only once the folder's entry is on disk.
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("replay: save: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("replay: save: sync %s: %w", dir, err)
	}
	return nil
}

// LoadFile restores a buffer saved by SaveFile, reading the file as it
// decodes (see Restore). It writes nothing: the temporary files of saves in
// progress or killed are SaveFile's to remove.
func LoadFile(path string) (*Buffer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: load: %w", err)
	}
	defer f.Close()
	b, err := Restore(f)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return b, nil
}

// TempGrace is how long a temporary file of SaveFile must have gone
// unmodified before another SaveFile of the same path removes it as left
// by a killed save. A live save writes its file continuously (every 64 KiB)
// and renames it seconds after its last write, so it is never that old.
const TempGrace = 10 * time.Minute

// removeStaleTemps removes the "path.tmp-*" files last modified before
// cutoff. Errors are ignored: a temporary file that cannot be removed, or
// that another save removed first, is harmless.
func removeStaleTemps(path string, cutoff time.Time) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	names, err := filepath.Glob(filepath.Join(dir, escapeGlob(base)+".tmp-*"))
	if err != nil {
		return
	}
	for _, n := range names {
		if fi, err := os.Lstat(n); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			os.Remove(n)
		}
	}
}

// escapeGlob escapes the characters filepath.Match treats specially.
func escapeGlob(s string) string {
	var b []byte
	for i := range len(s) {
		switch c := s[i]; c {
		case '*', '?', '[', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
