package replay

// chunked is a growable array of items of stride elements each, held in
// chunks of chunkItems items, that a snapshot can share without copying:
// share returns the chunk table (one pointer per chunk, so the time it
// takes under the buffer's lock does not grow with the items), and until
// the snapshot releases it, a write to a chunk the snapshot holds copies
// that chunk first (copy-on-write). The buffer's rings of experiences and
// the VCRS's slots and reward rings are chunked.
//
// Why not one flat slice copied under the lock, as before: at 4 Mi tracked
// prompts the VCRS's rings alone are 640 MiB, and copying them held Add
// for 216 ms. With chunks, share copies 1 Ki pointers and an Add during a
// snapshot copies at most the one or two chunks it writes (under 1 MiB).
//
// The first chunk grows geometrically up to chunkItems, so a small array
// (a buffer of 64 experiences) takes what it holds, not a whole chunk;
// later chunks are allocated whole.
// Reads go through at and item, writes through mut and mutItem; reading
// through mut would copy shared chunks for nothing.
type chunked[T any] struct {
	stride int
	n      int // items in use
	chunks []*chunk[T]
	// gen counts shares; a chunk made at or after the latest share is
	// private to the array. active counts the shares not yet released.
	gen    uint64
	active int
}

// chunk holds up to chunkItems items; gen is the array's gen when the
// chunk was made or last copied.
type chunk[T any] struct {
	gen uint64
	v   []T
}

const (
	chunkShift = 12
	chunkItems = 1 << chunkShift
	chunkMask  = chunkItems - 1
)

func newChunked[T any](stride int) chunked[T] { return chunked[T]{stride: stride} }

// len returns the number of items in use.
func (a *chunked[T]) len() int { return a.n }

// item returns item i for reading.
func (a *chunked[T]) item(i int) []T {
	c := a.chunks[i>>chunkShift]
	k := (i & chunkMask) * a.stride
	return c.v[k : k+a.stride : k+a.stride]
}

// at returns a pointer to item i of a stride-1 array, for reading.
func (a *chunked[T]) at(i int) *T { return &a.chunks[i>>chunkShift].v[i&chunkMask] }

// private returns chunk j, copied first if a snapshot may hold it.
func (a *chunked[T]) private(j int) *chunk[T] {
	c := a.chunks[j]
	if a.active > 0 && c.gen < a.gen {
		d := &chunk[T]{gen: a.gen, v: make([]T, len(c.v))}
		copy(d.v, c.v)
		a.chunks[j] = d
		c = d
	}
	return c
}

// mutItem returns item i for writing.
func (a *chunked[T]) mutItem(i int) []T {
	c := a.private(i >> chunkShift)
	k := (i & chunkMask) * a.stride
	return c.v[k : k+a.stride : k+a.stride]
}

// mut returns a pointer to item i of a stride-1 array, for writing.
func (a *chunked[T]) mut(i int) *T { return &a.private(i >> chunkShift).v[i&chunkMask] }

// grow makes the array n items long (n ≥ len), zero-filled, allocating
// what the new items need: whole chunks, and the last one geometrically.
func (a *chunked[T]) grow(n int) {
	if n <= a.n {
		return
	}
	need := (n + chunkMask) >> chunkShift
	for len(a.chunks) < need {
		a.chunks = append(a.chunks, nil)
	}
	for j := (a.n >> chunkShift); j < need; j++ {
		items := chunkItems
		if j == need-1 {
			items = n - j<<chunkShift
		}
		c := a.chunks[j]
		have := 0
		if c != nil {
			have = len(c.v) / a.stride
		}
		if items <= have {
			continue
		}
		// Only the first chunk grows geometrically, for small arrays; an
		// array past one chunk takes whole chunks, so that growing it
		// copies nothing (a geometric last chunk would copy, and leave
		// behind as garbage, about one chunk per chunk).
		if j == 0 && items < chunkItems {
			items = min(max(items, 2*have, 8), chunkItems)
		} else {
			items = chunkItems
		}
		d := &chunk[T]{gen: a.gen, v: make([]T, items*a.stride)}
		if c != nil {
			copy(d.v, c.v)
		}
		a.chunks[j] = d
	}
	a.n = n
}

// share returns the chunk table for a snapshot to read without the lock;
// the chunks stay unchanged until release is called.
func (a *chunked[T]) share() chunked[T] {
	a.gen++
	a.active++
	s := *a
	s.chunks = append([]*chunk[T](nil), a.chunks...)
	return s
}

// release ends a share; it must be called under the same lock as share.
func (a *chunked[T]) release() {
	if a.active > 0 {
		a.active--
	}
}
