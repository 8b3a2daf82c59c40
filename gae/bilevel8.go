package gae

import (
	"unsafe"

	"github.com/rlpost/rlpost/internal/kernel"
	"github.com/rlpost/rlpost/tensor"
)

// biLevelLanes runs Bi-Level GAE in kernel.BiLevelRows8 for scanLanes8.
// The kernel blends the turn-end and token branches per lane and checks
// the turn layout as it goes; a row whose mask or turn ends hold anything
// but 0 and 1 runs alone in biLevelRow instead, which names the problem.
// A row's masked padding (the mask and turn ends zero from the end of its
// leading run of ones on, as planGroups guessed) is cleared rather than
// scanned.
type biLevelLanes[F tensor.Float] struct {
	j *job[F]
	k kernel.BiLevelRows8
}

func (j *job[F]) scanBiLevel8(rows []int) {
	l := biLevelLanes[F]{j: j, k: kernel.BiLevelRows8{GTok: j.g[0], GLTok: j.g[1], GTurn: j.g[2], GLTurn: j.g[3], Delta: j.g[4]}}
	l.k.R, l.k.V, l.k.M, l.k.E = f32(j.rewards.Data), f32(j.values.Data), f32(j.mask.Data), f32(j.turnEnd.Data)
	l.k.Adv, l.k.Ret = f32(j.adv), f32(j.ret)
	j.scanLanes8(rows, l.begin, l.idle, l.run)
}

func (l *biLevelLanes[F]) begin(q, b, skew int) int {
	j, k := l.j, &l.k
	start, hold := j.rewards.Span(b)
	m, e := j.row(j.mask.Data, b), j.row(j.turnEnd.Data, b)
	// n: the tokens to scan. Past the guessed leading run of ones, a mask
	// and turn ends of zeros are padding.
	n, p := hold, j.plen[b]
	pm, pe := kernel.CountMask(mask32(m[p:])), kernel.CountMask(mask32(e[p:]))
	if kernel.CountMask(mask32(m[:p])) < 0 || kernel.CountMask(mask32(e[:p])) < 0 || pm < 0 || pe < 0 {
		j.runRow(b)
		return 0
	}
	if pm == 0 && pe == 0 {
		n = p
	}
	adv, ret := j.row(j.adv, b), j.row(j.ret, b)
	clear(adv[n:])
	clear(ret[n:])
	j.rows[b] = rowResult{}
	top := laneTop(n, hold, skew)
	var s biState
	if top < n {
		r, v := j.row(j.rewards.Data, b), j.row(j.values.Data, b)
		j.rows[b].bad = !biLevelSpan(adv[top:n], ret[top:n], r[top:n], v[top:n], m[top:n], e[top:n], j.g, &s)
	}
	if top == 0 {
		// The whole row ran in Go.
		j.rowDone(b)
		return 0
	}
	off, d, blocks := laneStart(start, top)
	k.Off[q], k.D[q] = off, d
	k.NV[q], k.NA[q], k.NVT[q], k.NAT[q] = s.nv, s.na, s.nvTurn, s.naTurn
	k.Seen &^= 1 << q
	if s.seen {
		k.Seen |= 1 << q
	}
	return blocks
}

func (l *biLevelLanes[F]) idle(q, src int) {
	k := &l.k
	k.Off[q], k.D[q] = k.Off[src], k.D[src]
	k.NV[q], k.NA[q], k.NVT[q], k.NAT[q] = k.NV[src], k.NA[src], k.NVT[src], k.NAT[src]
	k.Seen = k.Seen&^(1<<q) | (k.Seen>>src&1)<<q
}

func (l *biLevelLanes[F]) run(n int) int64 {
	l.k.N = int64(n)
	l.k.Run()
	return l.k.Bad
}

// mask32 views a float32 row as []float32; the eight-lane scans run only
// on float32 batches.
func mask32[F ~float32 | ~float64](x []F) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}
