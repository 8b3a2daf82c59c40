package replay

// sorted is a sorted multiset of float64 (never NaN) answering rank queries:
// the R̄ of every tracked prompt, from which tiers are cut. It is a list of
// sorted blocks of between blockMin and blockMax values, the blocks' last
// values in one array for a binary search, and a Fenwick tree over the
// block sizes for the number of values before a block. Insert, erase and
// rank cost two binary searches, a Fenwick walk and a copy of at most
// blockMax values, O(log n + blockMax), on contiguous memory; a block that
// splits or empties rebuilds the block index, O(n/blockMax), rarely.
// Blocks are recycled, so a steady population allocates nothing.
type sorted struct {
	blocks [][]float64
	last   []float64 // last[i] = blocks[i][len(blocks[i])-1]
	tree   []int     // Fenwick tree of len(blocks[i]), 1-based
	n      int
	spare  [][]float64
}

const (
	blockMax = 512
	blockMin = blockMax / 8
)

func (s *sorted) len() int { return s.n }

// find returns the first block whose last value is ≥ x (> x with after),
// or len(blocks) if none is.
func (s *sorted) find(x float64, after bool) int {
	lo, hi := 0, len(s.last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.last[m] < x || (after && s.last[m] == x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// search returns the index of the first value of b that is ≥ x (> x with
// after).
func search(b []float64, x float64, after bool) int {
	lo, hi := 0, len(b)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b[m] < x || (after && b[m] == x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// before returns the number of values in the blocks before block i.
func (s *sorted) before(i int) int {
	c := 0
	for ; i > 0; i &= i - 1 {
		c += s.tree[i-1]
	}
	return c
}

func (s *sorted) add(i, d int) {
	for i++; i <= len(s.tree); i += i & -i {
		s.tree[i-1] += d
	}
}

// count returns the number of values < x, or ≤ x with orEqual.
func (s *sorted) count(x float64, orEqual bool) int {
	i := s.find(x, orEqual)
	if i == len(s.blocks) {
		return s.n
	}
	return s.before(i) + search(s.blocks[i], x, orEqual)
}

// kth returns the value of rank k (0-based), k < n.
func (s *sorted) kth(k int) float64 {
	// Walk the Fenwick tree down to the block holding rank k.
	i, step := 0, 1
	for step*2 <= len(s.tree) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if j := i + step; j <= len(s.tree) && s.tree[j-1] <= k {
			k -= s.tree[j-1]
			i = j
		}
	}
	return s.blocks[i][k]
}

func (s *sorted) insert(x float64) {
	s.n++
	if len(s.blocks) == 0 {
		b := append(s.block(), x)
		s.blocks = append(s.blocks, b)
		s.rebuild()
		return
	}
	i := min(s.find(x, true), len(s.blocks)-1)
	b := s.blocks[i]
	j := search(b, x, true)
	b = append(b, 0)
	copy(b[j+1:], b[j:])
	b[j] = x
	s.blocks[i] = b
	s.last[i] = b[len(b)-1]
	s.add(i, 1)
	if len(b) > blockMax {
		s.split(i)
	}
}

// erase removes one copy of x, which must be present.
func (s *sorted) erase(x float64) {
	i := s.find(x, false)
	b := s.blocks[i]
	j := search(b, x, false)
	if j == len(b) || b[j] != x {
		panic("replay: erasing a value the set does not hold")
	}
	copy(b[j:], b[j+1:])
	b = b[:len(b)-1]
	s.blocks[i] = b
	s.n--
	switch {
	case len(b) == 0:
		s.spare = append(s.spare, b)
		s.blocks = append(s.blocks[:i], s.blocks[i+1:]...)
		s.rebuild()
	case len(b) < blockMin && len(s.blocks) > 1:
		s.last[i] = b[len(b)-1]
		s.join(i)
	default:
		s.last[i] = b[len(b)-1]
		s.add(i, -1)
	}
}

// block returns an empty block with room for a split's overflow.
func (s *sorted) block() []float64 {
	if k := len(s.spare); k > 0 {
		b := s.spare[k-1]
		s.spare = s.spare[:k-1]
		return b[:0]
	}
	return make([]float64, 0, blockMax+1)
}

// split halves block i.
func (s *sorted) split(i int) {
	b := s.blocks[i]
	h := len(b) / 2
	c := append(s.block(), b[h:]...)
	s.blocks[i] = b[:h]
	s.blocks = append(s.blocks, nil)
	copy(s.blocks[i+2:], s.blocks[i+1:])
	s.blocks[i+1] = c
	s.rebuild()
}

// join merges the small block i into a neighbour, or evens the two out
// when together they would overflow.
func (s *sorted) join(i int) {
	if i == len(s.blocks)-1 {
		i-- // the last block joins the one before it
	}
	a, b := s.blocks[i], s.blocks[i+1]
	if len(a)+len(b) <= blockMax {
		s.blocks[i] = append(a, b...)
		s.spare = append(s.spare, b[:0])
		s.blocks = append(s.blocks[:i+1], s.blocks[i+2:]...)
		s.rebuild()
		return
	}
	h := (len(a) + len(b)) / 2
	if m := h - len(a); m > 0 { // move b's first m values to a's end
		a = append(a, b[:m]...)
		b = b[:copy(b, b[m:])]
	} else if m < 0 { // move a's last −m values to b's front
		m = -m
		b = b[:len(b)+m]
		copy(b[m:], b[:len(b)-m])
		copy(b, a[h:])
		a = a[:h]
	}
	s.blocks[i], s.blocks[i+1] = a, b
	s.rebuild()
}

// rebuild recomputes the block index after blocks changed.
func (s *sorted) rebuild() {
	k := len(s.blocks)
	s.last = s.last[:0]
	s.tree = s.tree[:0]
	for _, b := range s.blocks {
		s.last = append(s.last, b[len(b)-1])
		s.tree = append(s.tree, len(b))
	}
	for i := 1; i <= k; i++ {
		if j := i + i&-i; j <= k {
			s.tree[j-1] += s.tree[i-1]
		}
	}
}
