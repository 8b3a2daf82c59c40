package replay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
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

// Restore reads a snapshot written by Snapshot and returns the buffer it
// describes, with no drop function. It decodes as it reads, so that it
// holds the buffer being built and a few kilobytes, never the whole
// snapshot; the length in the header bounds every allocation, and the
// checksum, checked at the end, decides whether the buffer is returned.
// Every invariant of the buffer is checked too, so that whatever the bytes
// it returns either a working buffer or an error wrapping ErrSnapshot (or
// r's error).
func Restore(r io.Reader) (*Buffer, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16), crc: crc32.New(castagnoli)}
	return d.decode()
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("replay: %w: %s", ErrSnapshot, fmt.Sprintf(format, a...))
}

func (d *decoder) decode() (*Buffer, error) {
	if p := d.next(len(snapshotMagic), "header"); d.err != nil || string(p) != snapshotMagic {
		if d.err != nil && !errors.Is(d.err, ErrSnapshot) {
			return nil, d.err
		}
		return nil, corrupt("not a replay snapshot (no %q header)", snapshotMagic)
	}
	format := d.u32("format version")
	d.total = d.u64("length")
	if d.err != nil {
		return nil, d.err
	}
	if format != snapshotFormat {
		return nil, corrupt("format version %d, this build reads version %d", format, snapshotFormat)
	}
	if d.total < headerLen+trailerLen {
		return nil, corrupt("length %d is shorter than header and checksum", d.total)
	}
	b, err := d.buffer()
	if err != nil {
		return nil, err
	}
	if body := d.total - trailerLen; d.off != body {
		return nil, corrupt("%d bytes of unknown data before the checksum", body-d.off)
	}
	want := d.crc.Sum32()
	var sum [trailerLen]byte
	if _, err := io.ReadFull(d.r, sum[:]); err != nil {
		return nil, d.readErr(err, "checksum")
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return nil, corrupt("checksum mismatch (stored %08x, computed %08x): the snapshot is corrupted", got, want)
	}
	if n, _ := io.Copy(io.Discard, d.r); n > 0 {
		return nil, corrupt("%d bytes after the end of a %d-byte snapshot", n, d.total)
	}
	return b, nil
}

// decoder reads little-endian numbers from a stream, feeding every byte to
// the checksum; an error sticks.
type decoder struct {
	r     *bufio.Reader
	crc   hash.Hash32
	off   uint64 // bytes read so far
	total uint64 // the snapshot's length from its header; 0 until read
	buf   []byte
	err   error
}

// left returns how many body bytes (before the checksum) remain.
func (d *decoder) left() uint64 {
	if d.total == 0 {
		return headerLen - d.off
	}
	if d.off > d.total-trailerLen {
		return 0
	}
	return d.total - trailerLen - d.off
}

func (d *decoder) readErr(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("truncated: %s runs past the end of the data (offset %d of %d)", what, d.off, d.total)
	}
	return fmt.Errorf("replay: restore: %w", err)
}

// next returns the next n bytes, valid until the following call.
func (d *decoder) next(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || uint64(n) > d.left() {
		d.err = corrupt("%s runs past the end (offset %d)", what, d.off)
		return nil
	}
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	p := d.buf[:n]
	if _, err := io.ReadFull(d.r, p); err != nil {
		d.err = d.readErr(err, what)
		return nil
	}
	d.crc.Write(p)
	d.off += uint64(n)
	return p
}

func (d *decoder) u16(what string) uint16 {
	if p := d.next(2, what); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if p := d.next(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if p := d.next(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) f64(what string) float64 { return math.Float64frombits(d.u64(what)) }

// count reads a length and checks that that many items of size bytes each
// can still follow, so that no allocation exceeds the snapshot's size.
func (d *decoder) count(size int, limit uint64, what string) int {
	n := d.u64(what)
	if d.err == nil && (n > limit || n > d.left()/uint64(size)) {
		d.err = corrupt("%s %d exceeds what the snapshot holds", what, n)
	}
	return int(n)
}

func (d *decoder) len32(size int, limit int, what string) int {
	n := d.u32(what)
	if d.err == nil && (uint64(n) > uint64(limit) || uint64(n) > d.left()/uint64(size)) {
		d.err = corrupt("%s %d exceeds what the snapshot holds", what, n)
	}
	return int(n)
}

func (d *decoder) buffer() (*Buffer, error) {
	var cfg Config
	capacity := d.u64("capacity")
	for t := range cfg.Shares {
		cfg.Shares[t] = d.f64("shares")
	}
	window := d.u32("window")
	maxPrompts := d.u64("max prompts")
	cfg.MaxStaleness = int64(d.u64("max staleness"))
	if d.err != nil {
		return nil, d.err
	}
	if capacity > maxCapacity || window > MaxWindow || maxPrompts > math.MaxInt32 {
		return nil, corrupt("configuration out of range: capacity %d, window %d, max prompts %d", capacity, window, maxPrompts)
	}
	cfg.Capacity, cfg.Window, cfg.MaxPrompts = int(capacity), int(window), int(maxPrompts)
	b, err := New(cfg)
	if err != nil {
		return nil, corrupt("configuration: %v", err)
	}
	b.version = int64(d.u64("version"))
	b.nextID = d.u64("next id")
	k := &b.c
	k.offered = d.u64("offered")
	for _, a := range [...]*[NumTiers]uint64{&k.inserted, &k.evicted, &k.expired} {
		for t := range a {
			a[t] = d.u64("counters")
		}
	}
	k.arrival = d.u64("stale on arrival")
	k.sampled = d.u64("sampled")
	k.ageSum = d.u64("age sum")
	k.ageMax = int64(d.u64("max age"))
	for i := range k.ageHist {
		k.ageHist[i] = d.u64("age histogram")
	}
	k.hints = d.u64("hints")
	b.vcrs.forgotten = d.u64("forgotten")
	if d.err != nil {
		return nil, d.err
	}
	if b.version < 0 || k.ageMax < 0 {
		return nil, corrupt("negative version %d or age %d", b.version, k.ageMax)
	}
	var hist uint64
	for _, x := range k.ageHist {
		hist += x
	}
	if hist != k.sampled {
		return nil, corrupt("age histogram counts %d samples, the counter %d", hist, k.sampled)
	}
	if err := d.prompts(b); err != nil {
		return nil, err
	}
	if err := d.tiers(b); err != nil {
		return nil, err
	}
	var inserted uint64
	for t := range b.tiers {
		if k.inserted[t] != uint64(b.tiers[t].n)+k.evicted[t]+k.expired[t] {
			return nil, corrupt("%s tier: %d inserted, but %d held + %d evicted + %d expired",
				Tier(t), k.inserted[t], b.tiers[t].n, k.evicted[t], k.expired[t])
		}
		inserted += k.inserted[t]
	}
	if k.offered != inserted+k.arrival || b.nextID != k.offered {
		return nil, corrupt("%d offered and next id %d, but %d inserted + %d stale on arrival", k.offered, b.nextID, inserted, k.arrival)
	}
	return b, nil
}

func (d *decoder) prompts(b *Buffer) error {
	v := b.vcrs
	w := v.window
	n := d.count(8+8+2+2+2+8*w, uint64(v.max), "prompt count")
	if d.err == nil {
		v.reserve(n)
	}
	for range n {
		id := d.u64("prompt id")
		sum := d.f64("prompt sum")
		cnt, pos, hints := d.u16("prompt count"), d.u16("ring position"), d.u16("hints")
		ring := d.next(8*w, "ring")
		if d.err != nil {
			return d.err
		}
		if _, dup := v.index[id]; dup {
			return corrupt("prompt %d listed twice", id)
		}
		if cnt == 0 || int(cnt) > w || int(pos) >= w || (int(cnt) < w && pos != cnt) || !isFinite(sum) {
			return corrupt("prompt %d: %d rewards at ring position %d with W = %d, sum %v", id, cnt, pos, w, sum)
		}
		s := v.claim(id)
		r := v.rings[int(s)*w : (int(s)+1)*w]
		for i := range r {
			r[i] = math.Float64frombits(binary.LittleEndian.Uint64(ring[8*i:]))
			if checkReward("reward", r[i]) != nil {
				return corrupt("prompt %d: reward %v", id, r[i])
			}
		}
		sl := &v.slots[s]
		sl.sum, sl.n, sl.pos, sl.hints = sum, cnt, pos, hints
		sl.mean = sum / float64(cnt)
		if checkReward("mean", sl.mean) != nil {
			return corrupt("prompt %d: mean %v", id, sl.mean)
		}
		v.means.insert(sl.mean)
		v.linkNewest(s)
	}
	return d.err
}

// fill reads len(p) bytes into p in pieces, so that a large payload is
// not staged in the decoder's buffer as well.
func (d *decoder) fill(p []byte, what string) {
	for len(p) > 0 && d.err == nil {
		k := min(len(p), 1<<16)
		if q := d.next(k, what); q != nil {
			copy(p, q)
		}
		p = p[k:]
	}
}

func (d *decoder) tiers(b *Buffer) error {
	seen := map[uint64]bool{}
	for t := range b.tiers {
		f := &b.tiers[t]
		n := d.count(5*8+3*4, uint64(len(f.ring)), Tier(t).String()+" tier count")
		prev := uint64(0)
		for i := range n {
			var e entry
			e.id = d.u64("id")
			e.Prompt = d.u64("prompt")
			e.Version = int64(d.u64("version"))
			e.Reward = d.f64("reward")
			e.baseline = d.f64("baseline")
			if nl := d.len32(4, maxTokens, "logp length"); nl > 0 {
				p := d.next(4*nl, "logp")
				if d.err == nil {
					e.Logp = make([]float32, nl)
					for j := range e.Logp {
						e.Logp[j] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*j:]))
					}
				}
			}
			if nt := d.len32(4, maxTokens, "token count"); nt > 0 {
				p := d.next(4*nt, "tokens")
				if d.err == nil {
					e.Tokens = make([]int32, nt)
					for j := range e.Tokens {
						e.Tokens[j] = int32(binary.LittleEndian.Uint32(p[4*j:]))
					}
				}
			}
			if np := d.len32(1, maxPayload, "payload length"); np > 0 && d.err == nil {
				e.Payload = make([]byte, np)
				d.fill(e.Payload, "payload")
			}
			if d.err != nil {
				return d.err
			}
			if err := e.check(); err != nil {
				return corrupt("%s tier, experience %d (id %d): %v", Tier(t), i, e.id, err)
			}
			switch {
			case e.id >= b.nextID || seen[e.id] || (i > 0 && e.id <= prev):
				return corrupt("%s tier, experience %d: id %d out of order, repeated or not yet issued (next %d)", Tier(t), i, e.id, b.nextID)
			case !isFinite(e.baseline):
				return corrupt("%s tier, experience %d: baseline %v", Tier(t), i, e.baseline)
			case b.stale(e.Version):
				return corrupt("%s tier, experience %d: version %d is stale at version %d", Tier(t), i, e.Version, b.version)
			}
			seen[e.id], prev = true, e.id
			e.slot = b.vcrs.slotOf(e.Prompt)
			*f.at(f.n) = e
			f.n++
		}
	}
	return nil
}
