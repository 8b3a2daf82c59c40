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

	"github.com/rlpost/rlpost/tensor"
)

// ErrSnapshot is wrapped by every error about the contents of a snapshot:
// not one, a format this build does not read, truncated, corrupted or
// inconsistent.
var ErrSnapshot = errors.New("invalid replay snapshot")

// The snapshot format, version 1. Every number is little-endian; floats
// are their IEEE 754 bits, so a round trip is exact.
//
//	magic "RLPRPLY\x00" · format u32 · total length u64
//	config:   capacity u64 · shares 3×f64 · window u32 · max prompts u64 · max staleness i64
//	state:    version i64 · next id u64 · offered u64 · inserted 3×u64 · evicted 3×u64 ·
//	          expired 3×u64 · stale on arrival u64 · sampled u64 · age sum u64 · max age i64 ·
//	          age histogram 8×u64 · hints u64 · forgotten prompts u64
//	vcrs:     n u64, then per prompt, least recently updated first:
//	          id u64 · sum f64 · count u16 · ring position u16 · hints u16 · ring W×f64
//	tiers:    Easy, Medium, Hard: n u64, then per experience, oldest first:
//	          id u64 · prompt u64 · version i64 · reward f64 · baseline f64 ·
//	          n u32 · logp n×f32 · n u32 · tokens n×i32 · n u32 · payload n bytes
//	CRC-32C (Castagnoli) u32 of everything before it
const (
	snapshotMagic  = "RLPRPLY\x00"
	snapshotFormat = 1
	headerLen      = 8 + 4 + 8
	trailerLen     = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// state is a copy of a buffer's contents, taken under its lock so that the
// slow encoding runs without it. The copy is a handful of bulk copies of
// the buffer's flat arrays — the VCRS slots and rings, the tiers' rings —
// into slices allocated before the lock is taken, so the lock is held for
// memory bandwidth only; walking the prompts in order and encoding happen
// after it is released. Experiences' slices are shared, not copied: the
// buffer never modifies them.
type state struct {
	cfg       Config
	version   int64
	nextID    uint64
	c         counters
	forgotten uint64
	prompts   int
	oldest    int32
	slots     []slot    // the VCRS slots, linked oldest to newest
	rings     []float64 // W per slot
	tiers     [NumTiers]fifo
}

// sizes are the lengths state copies, read to allocate before locking.
type sizes struct {
	slots int
	tiers [NumTiers]int
}

func (b *Buffer) sizes() sizes {
	b.mu.Lock()
	defer b.mu.Unlock()
	z := sizes{slots: len(b.vcrs.slots)}
	for t := range b.tiers {
		z.tiers[t] = len(b.tiers[t].ring)
	}
	return z
}

func (b *Buffer) state() *state {
	// Allocate (and fault in) the copy's memory before taking the lock,
	// with room for the prompts that may arrive meanwhile; re-allocate
	// under the lock only if even that was not enough.
	z := b.sizes()
	w := b.cfg.Window
	room := z.slots + z.slots/16 + 64
	s := &state{slots: make([]slot, room), rings: make([]float64, room*w)}
	for t := range s.tiers {
		s.tiers[t].ring = make([]entry, z.tiers[t])
	}
	// Fresh memory from the OS is mapped on first write; write every page
	// now so that the page faults do not happen under the lock.
	for i := 0; i < len(s.rings); i += 512 {
		s.rings[i] = 0
	}
	for i := 0; i < len(s.slots); i += 64 {
		s.slots[i] = slot{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.vcrs
	s.cfg, s.version, s.nextID, s.c, s.forgotten = b.cfg, b.version, b.nextID, b.c, v.forgotten
	s.prompts, s.oldest = len(v.index), v.oldest
	if len(v.slots) > len(s.slots) {
		s.slots, s.rings = make([]slot, len(v.slots)), make([]float64, len(v.rings))
	}
	s.slots = s.slots[:copy(s.slots, v.slots)]
	s.rings = s.rings[:copy(s.rings, v.rings)]
	for t := range b.tiers {
		f := &b.tiers[t]
		copy(s.tiers[t].ring, f.ring)
		s.tiers[t].head, s.tiers[t].n = f.head, f.n
	}
	return s
}

// size returns the encoded length of s.
func (s *state) size() uint64 {
	n := uint64(headerLen + trailerLen)
	n += 8 + 3*8 + 4 + 8 + 8                          // config
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
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	e := encoder{w: bw}
	e.bytes([]byte(snapshotMagic))
	e.u32(snapshotFormat)
	e.u64(s.size())
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

func (s *state) encode(e *encoder) {
	c := &s.cfg
	e.u64(uint64(c.Capacity))
	for _, x := range c.Shares {
		e.f64(x)
	}
	e.u32(uint32(c.Window))
	e.u64(uint64(c.MaxPrompts))
	e.u64(uint64(c.MaxStaleness))

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
	w := s.cfg.Window
	for i := s.oldest; i != none; i = s.slots[i].newer {
		p := &s.slots[i]
		e.u64(p.id)
		e.f64(p.sum)
		e.u16(p.n)
		e.u16(p.pos)
		e.u16(p.hints)
		for _, r := range s.rings[int(i)*w : (int(i)+1)*w] {
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
// same folder, synced to disk, then renamed over path, and the folder
// synced. A crash at any moment leaves either the previous file or the new
// one, never a mix. A save killed mid-way leaves a temporary file
// "path.tmp-*" behind; LoadFile never reads it, and the next SaveFile or
// LoadFile of the same path removes it — so one path must have one writer
// at a time. The file is readable by its owner only.
func (b *Buffer) SaveFile(path string) (err error) {
	removeTemps(path)
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
// decodes (see Restore). It first removes the temporary files a save of the
// same path killed mid-way left behind (see SaveFile).
func LoadFile(path string) (*Buffer, error) {
	removeTemps(path)
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

// removeTemps removes the "path.tmp-*" files SaveFile writes before its
// rename: any that exist when no save of path is running were left by a
// save that was killed. Errors are ignored: a temporary file that cannot be
// removed is harmless.
func removeTemps(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	names, err := filepath.Glob(filepath.Join(dir, escapeGlob(base)+".tmp-*"))
	if err != nil {
		return
	}
	for _, n := range names {
		os.Remove(n)
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
