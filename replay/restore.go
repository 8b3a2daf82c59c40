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

	"github.com/rlpost/rlpost/tensor"
)

// Restore reads a snapshot written by Snapshot and returns the buffer it
// describes, with no drop function. It decodes as it reads, so that it
// holds the buffer being built and a few kilobytes, never the whole
// snapshot; the length in the header bounds every allocation, and the
// checksum, checked at the end, decides whether the buffer is returned.
// Every invariant of the buffer is checked too, so that whatever the bytes
// it returns either a working buffer or an error wrapping ErrSnapshot (or
// r's error).
//
// Nothing is sized from a field before it is trusted: the header and the
// configuration carry a checksum of their own (format 2) that is checked
// before the buffer is built, every count is checked against the bytes the
// length says remain before anything is allocated for it, and the buffer's
// arrays grow as experiences arrive rather than to the configured
// capacity. So a corrupt or hostile snapshot costs at most about its own
// length in memory, and RestoreWith can bound that length.
func Restore(r io.Reader) (*Buffer, error) { return RestoreWith(r, RestoreOptions{}) }

// RestoreOptions bound what Restore accepts.
type RestoreOptions struct {
	// MaxBytes refuses a snapshot whose header announces more bytes, before
	// anything is allocated from it. 0 means no limit beyond the format's.
	MaxBytes int64
}

// RestoreWith is Restore with options.
func RestoreWith(r io.Reader, opt RestoreOptions) (*Buffer, error) {
	if opt.MaxBytes < 0 {
		return nil, fmt.Errorf("replay: %w", tensor.Errorf(tensor.ErrRange, "RestoreOptions.MaxBytes", nil, "%d, want ≥ 0 (0: no limit)", opt.MaxBytes))
	}
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16), crc: crc32.New(castagnoli), max: uint64(opt.MaxBytes)}
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
	if format != 1 && format != snapshotFormat {
		return nil, corrupt("format version %d, this build reads versions 1 and %d", format, snapshotFormat)
	}
	d.format = format
	if d.total < headerLen+trailerLen {
		return nil, corrupt("length %d is shorter than header and checksum", d.total)
	}
	if d.max > 0 && d.total > d.max {
		return nil, corrupt("length %d exceeds the %d bytes RestoreOptions.MaxBytes allows", d.total, d.max)
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
	r      *bufio.Reader
	crc    hash.Hash32
	off    uint64 // bytes read so far
	total  uint64 // the snapshot's length from its header; 0 until read
	max    uint64 // RestoreOptions.MaxBytes; 0 for no limit
	format uint32
	buf    []byte
	err    error
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
	if d.format >= 2 {
		want := d.crc.Sum32()
		if got := d.u32("header checksum"); d.err != nil {
			return nil, d.err
		} else if got != want {
			return nil, corrupt("header checksum mismatch (stored %08x, computed %08x): the header or configuration is corrupted", got, want)
		}
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
		r := v.rings.mutItem(int(s))
		for i := range r {
			r[i] = math.Float64frombits(binary.LittleEndian.Uint64(ring[8*i:]))
			if checkReward("reward", r[i]) != nil {
				return corrupt("prompt %d: reward %v", id, r[i])
			}
		}
		sl := v.slotMut(s)
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
	for t := range b.tiers {
		f := &b.tiers[t]
		n := d.count(5*8+3*4, uint64(f.limit), Tier(t).String()+" tier count")
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
			case e.id >= b.nextID || (i > 0 && e.id <= prev):
				return corrupt("%s tier, experience %d: id %d out of order, repeated or not yet issued (next %d)", Tier(t), i, e.id, b.nextID)
			case !isFinite(e.baseline):
				return corrupt("%s tier, experience %d: baseline %v", Tier(t), i, e.baseline)
			case b.stale(e.Version):
				return corrupt("%s tier, experience %d: version %d is stale at version %d", Tier(t), i, e.Version, b.version)
			}
			prev = e.id
			e.slot = b.vcrs.slotOf(e.Prompt)
			*f.mut(f.n) = e
			f.n++
		}
	}
	return uniqueIDs(b)
}

// uniqueIDs checks that no id is in two tiers. Each tier's ids increase
// (tiers checks that as it reads), so one merge of the three finds a
// repeat with no memory beyond the buffer's: a set of a million ids would
// cost more than the experiences themselves.
func uniqueIDs(b *Buffer) error {
	var pos [NumTiers]int
	last, started := uint64(0), false
	for {
		best := -1
		for t := range b.tiers {
			if pos[t] < b.tiers[t].n && (best < 0 || b.tiers[t].at(pos[t]).id < b.tiers[best].at(pos[best]).id) {
				best = t
			}
		}
		if best < 0 {
			return nil
		}
		id := b.tiers[best].at(pos[best]).id
		if started && id == last {
			return corrupt("experience id %d is in two tiers", id)
		}
		last, started = id, true
		pos[best]++
	}
}
