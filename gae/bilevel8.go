package gae

import (
	"math"
	"unsafe"

	"github.com/rlpost/rlpost/internal/kernel"
)

// scanBiLevel8 runs Bi-Level GAE over a piece of float32 rows in the eight
// lanes of kernel.BiLevelRows8, each lane taking the piece's next row when
// its row ends, as scanRows8 does for token-level GAE (its skew included).
// The kernel blends the turn-end and token branches per lane and checks the
// turn layout as it goes; a row whose mask or turn ends hold anything but
// 0 and 1 runs alone in biLevelRow instead, which names the problem. A
// row's masked padding (the mask and turn ends zero from the end of its
// leading run of ones on, as planGroups guessed) is cleared rather than
// scanned.
func (j *job[F]) scanBiLevel8(rows []int) {
	k := kernel.BiLevelRows8{GTok: j.g[0], GLTok: j.g[1], GTurn: j.g[2], GLTurn: j.g[3], Delta: j.g[4]}
	k.R, k.V, k.M, k.E = f32(j.rewards.Data), f32(j.values.Data), f32(j.mask.Data), f32(j.turnEnd.Data)
	k.Adv, k.Ret = f32(j.adv), f32(j.ret)
	var lane [8]int
	var left [8]int
	next := 0
	take := func(q int, skew int) {
		lane[q], left[q] = -1, 0
		for next < len(rows) {
			b := rows[next]
			next++
			start, hold := j.rewards.Span(b)
			m, e := j.row(j.mask.Data, b), j.row(j.turnEnd.Data, b)
			// n: the tokens to scan. Past the guessed leading run of
			// ones, a mask and turn ends of zeros are padding.
			n, p := hold, j.plen[b]
			pm, pe := kernel.CountMask(mask32(m[p:])), kernel.CountMask(mask32(e[p:]))
			if kernel.CountMask(mask32(m[:p])) < 0 || kernel.CountMask(mask32(e[:p])) < 0 || pm < 0 || pe < 0 {
				j.runRow(b)
				continue
			}
			if pm == 0 && pe == 0 {
				n = p
			}
			adv, ret := j.row(j.adv, b), j.row(j.ret, b)
			clear(adv[n:])
			clear(ret[n:])
			j.rows[b] = rowResult{}
			top := n
			if n > hold&^7 || skew > 0 {
				top = max(min(n&^7-skew, hold&^7), 0)
			}
			var s biState
			if top < n {
				r, v := j.row(j.rewards.Data, b), j.row(j.values.Data, b)
				j.rows[b].bad = !biLevelSpan(adv[top:n], ret[top:n], r[top:n], v[top:n], m[top:n], e[top:n], j.g, &s)
			}
			if top == 0 {
				// The whole row ran in Go.
				j.rowDone(b)
				continue
			}
			t0 := (top - 1) &^ 7
			k.Off[q], k.D[q] = int64(4*(start+t0)), int32(top-t0-8)
			k.NV[q], k.NA[q], k.NVT[q], k.NAT[q] = s.nv, s.na, s.nvTurn, s.naTurn
			k.Seen &^= 1 << q
			if s.seen {
				k.Seen |= 1 << q
			}
			lane[q], left[q] = b, t0/8+1
			return
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
				k.Off[q], k.D[q] = k.Off[src], k.D[src]
				k.NV[q], k.NA[q], k.NVT[q], k.NAT[q] = k.NV[src], k.NA[src], k.NVT[src], k.NAT[src]
				k.Seen = k.Seen&^(1<<q) | (k.Seen>>src&1)<<q
			}
		}
		k.N = int64(least)
		k.Run()
		for q, b := range lane {
			if b < 0 {
				continue
			}
			j.rows[b].bad = j.rows[b].bad || k.Bad>>q&1 != 0
			if left[q] -= least; left[q] == 0 {
				j.rowDone(b)
				take(q, 0)
			}
		}
	}
}

// mask32 views a float32 row as []float32; the eight-lane scans run only
// on float32 batches.
func mask32[F ~float32 | ~float64](x []F) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}
