package gae

import (
	"cmp"
	"math"
	"slices"
	"unsafe"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/tensor"
)

// The token-level scan of float32 rows in groups: the recursion of one row
// is a chain of dependent multiply-adds, so the kernels run several rows at
// once, one per vector lane, each with the Go loop's operations in its
// order (the same bits as tokenRow). Eight rows with AVX-512
// (kernel.GAERows8), four with AVX2 (kernel.GAETokens4).

// planGroups prepares the token-level scan of float32 rows w at a time
// (w = 8: scanRows8; w = 4: scanQuad). It orders the rows by the length of
// their mask's leading run of ones, longest first, found by bisection as if
// the mask were a prefix of ones (the usual padding), so that the rows of a
// piece have nearly the same length and the longest pieces are handed out
// first; the scans check each mask in full before relying on it. With w =
// 8 a piece is up to rowsPerPiece8 rows, dealt out from the sorted order in
// turn, which the kernel's eight lanes take in turn; with w = 4 a piece is
// four rows, and the last one to three rows run on their own. Each row's result is its own, so the
// order changes no bits.
func (j *job[F]) planGroups(w int) {
	B := len(j.rows)
	j.plen = slices.Grow(j.plen[:0], B)[:B]
	j.order, j.single = slices.Grow(j.order[:0], B)[:0], j.single[:0]
	for b := range B {
		m := j.mask.Row(b)
		// The first t with m[t] ≠ 1, if the ones come first.
		lo, hi := 0, len(m)
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); m[mid] == 1 {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		j.plen[b] = lo
		j.order = append(j.order, b)
	}
	slices.SortFunc(j.order, func(a, b int) int {
		return cmp.Or(cmp.Compare(j.plen[b], j.plen[a]), cmp.Compare(a, b))
	})
	j.width = w
	if w == 8 {
		// Deal the sorted rows out to the pieces in turn, so that the
		// pieces hold about the same number of tokens (and two workers
		// finish together) while each piece's rows stay longest first.
		P := (B + rowsPerPiece8 - 1) / rowsPerPiece8
		j.groups = P
		j.single = append(j.single[:0], j.order...)
		j.order = j.order[:0]
		for p := range P {
			for i := p; i < B; i += P {
				j.order = append(j.order, j.single[i])
			}
		}
		j.single = j.single[:0]
		return
	}
	j.groups = B / 4
	j.single = append(j.single, j.order[4*j.groups:]...)
	j.order = j.order[:4*j.groups]
}

// piece8 returns the rows of piece p of the eight-lane scans: planGroups
// dealt the rows out in turn, so the first B mod P pieces have one more.
func (j *job[F]) piece8(p int) []int {
	B, P := len(j.order), j.groups
	start := p*(B/P) + min(p, B%P)
	n := B / P
	if p < B%P {
		n++
	}
	return j.order[start : start+n]
}

// rowsPerPiece8 is the number of rows of one piece of scanLanes8: two per
// lane, so that a lane whose row ends early takes another, and few pieces
// per worker end with lanes idle.
const rowsPerPiece8 = 16

// laneSkew8 is how many tokens further on each lane of scanLanes8 starts its
// first row than the lane before it: at the same token, rows T·4 bytes
// apart (T a multiple of 1024) map onto the same cache sets, and eight
// rows of four arrays evict each other from a 12-way L1 cache (three
// times slower); 32 tokens put each lane's lines two sets on.
const laneSkew8 = 32

// scanLanes8 drives an eight-lane row kernel over a piece of float32 rows:
// each lane takes the piece's next row when its row ends (lane q's first
// row starts laneSkew8·q tokens short of its end, see laneSkew8), and the
// kernel runs until some lane's row ends; an idle lane repeats the lane
// whose row ends first. The schedule is the same for both kernels, so
// they share it; what a row needs before and after the kernel is theirs:
//
//   - begin gives lane q row b, its first tokens skew tokens short of the
//     row's length; it runs in Go what the kernel cannot (a row it does not
//     take, the last tokens) and returns the blocks of eight tokens left for
//     the kernel, 0 when the row is done;
//   - idle makes lane q repeat lane src, for a lane with no row left;
//   - run runs n blocks in every lane and returns the lanes whose rows went
//     bad, one bit each.
//
// They are functions, not an interface, so that the kernel's state stays
// on the caller's stack: a call through an interface would move it to the
// heap, an allocation per piece.
func (j *job[F]) scanLanes8(rows []int, begin func(q, b, skew int) int, idle func(q, src int), run func(n int) int64) {
	var lane [8]int // row of each lane, −1 for none
	var left [8]int // blocks left of each lane's row
	next := 0
	take := func(q int, skew int) {
		lane[q], left[q] = -1, 0
		for next < len(rows) {
			b := rows[next]
			next++
			if n := begin(q, b, skew); n > 0 {
				lane[q], left[q] = b, n
				return
			}
		}
	}
	for q := range 8 {
		take(q, laneSkew8*q)
	}
	for {
		least, src := math.MaxInt, -1
		for q, b := range lane {
			if b >= 0 && left[q] < least {
				least, src = left[q], q
			}
		}
		if src < 0 {
			break
		}
		for q, b := range lane {
			if b < 0 {
				idle(q, src)
			}
		}
		bad := run(least)
		for q, b := range lane {
			if b < 0 {
				continue
			}
			j.rows[b].bad = j.rows[b].bad || bad>>q&1 != 0
			if left[q] -= least; left[q] == 0 {
				j.rowDone(b)
				take(q, 0)
			}
		}
	}
}

// laneTop returns where a lane's kernel part [0, top) of a row of n tokens
// ends, hold tokens stored from the row's start, the lane skew tokens
// short: top = n unless the row's top block would pass its end (n rounded
// up to a multiple of 8 exceeds hold) or the lane is skewed, and then a
// multiple of 8 (the Go tail runs [top, n) first).
func laneTop(n, hold, skew int) int {
	if n > hold&^7 || skew > 0 {
		return max(min(n&^7-skew, hold&^7), 0)
	}
	return n
}

// laneStart returns a lane's byte offset of its top block, the block's
// offset D and the lane's count of blocks, for the kernel part [0, top),
// top > 0, of a row starting at element start.
func laneStart(start, top int) (off int64, d int32, blocks int) {
	t0 := (top - 1) &^ 7
	return int64(4 * (start + t0)), int32(top - t0 - 8), t0/8 + 1
}

// tokenLanes runs token-level GAE in kernel.GAERows8 for scanLanes8, on
// rows whose masks are prefixes of ones (others run alone in runRow).
type tokenLanes[F tensor.Float] struct {
	j *job[F]
	k kernel.GAERows8
}

func (j *job[F]) scanRows8(rows []int) {
	l := tokenLanes[F]{j: j, k: kernel.GAERows8{G: j.g[0], GL: j.g[1]}}
	l.k.R, l.k.V, l.k.Adv, l.k.Ret = f32(j.rewards.Data), f32(j.values.Data), f32(j.adv), f32(j.ret)
	j.scanLanes8(rows, l.begin, l.idle, l.run)
}

func (l *tokenLanes[F]) begin(q, b, skew int) int {
	j, k := l.j, &l.k
	n := j.plen[b]
	if !isPrefix(j.row(j.mask.Data, b), n) {
		j.runRow(b)
		return 0
	}
	start, hold := j.rewards.Span(b)
	adv, ret := j.row(j.adv, b), j.row(j.ret, b)
	clear(adv[n:])
	clear(ret[n:])
	j.rows[b] = rowResult{}
	top := laneTop(n, hold, skew)
	var nv, na float64
	if top < n {
		ok := false
		nv, na, ok = tokenTail(adv[top:n], ret[top:n],
			j.row(j.rewards.Data, b)[top:n], j.row(j.values.Data, b)[top:n], j.g[0], j.g[1])
		j.rows[b].bad = !ok
	}
	if top == 0 {
		j.rowDone(b)
		return 0
	}
	off, d, blocks := laneStart(start, top)
	k.Off[q], k.D[q], k.NV[q], k.NA[q] = off, d, nv, na
	return blocks
}

func (l *tokenLanes[F]) idle(q, src int) {
	k := &l.k
	k.Off[q], k.D[q], k.NV[q], k.NA[q] = k.Off[src], k.D[src], k.NV[src], k.NA[src]
}

func (l *tokenLanes[F]) run(n int) int64 {
	l.k.N = int64(n)
	l.k.Run()
	return l.k.Bad
}

// rowDone completes the result of row b once its scan has run, as runRow
// does.
func (j *job[F]) rowDone(b int) {
	if res := &j.rows[b]; !res.bad && j.whiten {
		res.n, res.sum = rowSum(j.row(j.adv, b), j.row(j.mask.Data, b))
	}
}

// scanQuad runs the token-level scan of four float32 rows whose masks are
// prefixes of ones together (same arithmetic, so the same bits): each
// row's last tokens beyond the shortest one's length in Go, then the
// common part in the four lanes of kernel.GAETokens4, whose four
// independent chains of multiply-adds overlap.
func (j *job[F]) scanQuad(rows []int) {
	if !j.prefixes(rows) {
		return
	}
	common := j.T
	for _, b := range rows {
		common = min(common, j.plen[b])
	}
	k := kernel.GAETokens4{N: int64(common), G: kernel.Splat64(j.g[0]), GL: kernel.Splat64(j.g[1])}
	var ok [4]bool
	for q, b := range rows {
		n := j.plen[b]
		adv, ret := j.row(j.adv, b), j.row(j.ret, b)
		clear(adv[n:])
		clear(ret[n:])
		k.NV[q], k.NA[q], ok[q] = tokenTail(adv[common:n], ret[common:n],
			j.row(j.rewards.Data, b)[common:n], j.row(j.values.Data, b)[common:n], j.g[0], j.g[1])
		start, _ := j.rewards.Span(b)
		k.Off[q] = int64(4 * start)
	}
	if common > 0 {
		k.R, k.V, k.Adv, k.Ret = f32(j.rewards.Data), f32(j.values.Data), f32(j.adv), f32(j.ret)
		k.Run()
	}
	j.groupResults(rows, ok[:], k.Bad)
}

// prefixes reports whether the mask of every row of a group is the prefix
// of ones planGroups guessed. If one is not (the bisection's guess is then
// wrong, or the mask has entries other than 0 and 1), it runs the group's
// rows through the one-row loop instead and returns false.
func (j *job[F]) prefixes(rows []int) bool {
	for _, b := range rows {
		if !isPrefix(j.row(j.mask.Data, b), j.plen[b]) {
			for _, b := range rows {
				j.runRow(b)
			}
			return false
		}
	}
	return true
}

// groupResults records the rows of a group: row rows[q] is bad if its Go
// tail was (ok[q] false) or the kernel flagged lane q.
func (j *job[F]) groupResults(rows []int, ok []bool, bad int64) {
	for q, b := range rows {
		res := &j.rows[b]
		*res = rowResult{bad: !ok[q] || bad>>q&1 != 0}
		if !res.bad && j.whiten {
			res.n, res.sum = rowSum(j.row(j.adv, b), j.row(j.mask.Data, b))
		}
	}
}

// f32 returns the address of x's first element as float32 storage; the
// grouped scans run only on float32 batches.
func f32[F tensor.Float](x []F) *float32 {
	return (*float32)(unsafe.Pointer(unsafe.SliceData(x)))
}

// isPrefix reports whether the float32 mask m is n ones followed by zeros,
// reading each entry once.
func isPrefix[F tensor.Float](m []F, n int) bool {
	m32 := mask32(m)
	return kernel.CountMask(m32[:n]) == n && kernel.CountMask(m32[n:]) == 0
}

// tokenTail is tokenRow's recursion over tokens that are all valid and are
// the last valid ones of their row; it returns the state it leaves for the
// token before them (the value and advantage of its next valid token) and
// whether every result is finite.
func tokenTail[F tensor.Float](adv, ret, r, v []F, g, gl float64) (nv, na float64, ok bool) {
	var bad uint64
	v, ret, adv = v[:len(r)], ret[:len(r)], adv[:len(r)]
	for t := len(r) - 1; t >= 0; t-- {
		vt := float64(v[t])
		a := float64(r[t]) + g*nv - vt + gl*na
		fa, fr := F(a), F(a+vt)
		bad |= nonFinite(fa) | nonFinite(fr)
		adv[t], ret[t] = fa, fr
		nv, na = vt, a
	}
	return nv, na, bad == 0
}
