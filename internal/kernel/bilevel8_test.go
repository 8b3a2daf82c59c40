package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestBiLevelRows8Layout pins the offsets the assembly reads.
func TestBiLevelRows8Layout(t *testing.T) {
	var k BiLevelRows8
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"R", unsafe.Offsetof(k.R), 0}, {"V", unsafe.Offsetof(k.V), 8}, {"M", unsafe.Offsetof(k.M), 16},
		{"E", unsafe.Offsetof(k.E), 24}, {"Adv", unsafe.Offsetof(k.Adv), 32}, {"Ret", unsafe.Offsetof(k.Ret), 40},
		{"Off", unsafe.Offsetof(k.Off), 48}, {"D", unsafe.Offsetof(k.D), 112}, {"N", unsafe.Offsetof(k.N), 144},
		{"Seen", unsafe.Offsetof(k.Seen), 152}, {"GTok", unsafe.Offsetof(k.GTok), 160},
		{"GLTok", unsafe.Offsetof(k.GLTok), 168}, {"GTurn", unsafe.Offsetof(k.GTurn), 176},
		{"GLTurn", unsafe.Offsetof(k.GLTurn), 184}, {"Delta", unsafe.Offsetof(k.Delta), 192},
		{"NV", unsafe.Offsetof(k.NV), 208}, {"NA", unsafe.Offsetof(k.NA), 272}, {"NVT", unsafe.Offsetof(k.NVT), 336},
		{"NAT", unsafe.Offsetof(k.NAT), 400}, {"Bad", unsafe.Offsetof(k.Bad), 464},
	} {
		require.Equal(t, f.want, f.got, "offset of %s", f.name)
	}
}

// biState is one lane's state of the Bi-Level recursion.
type biState struct {
	nv, na, nvT, naT float64
	seen             bool
}

// goBiLevel is the recursion of BiLevelRows8 over tokens [0, n) of one row
// as a Go loop that, unlike gae's, goes on past an error; it reports
// whether it met one.
func goBiLevel(adv, ret, r, v, m, e []float32, n int, k *BiLevelRows8, s biState) bool {
	bad := false
	for t := n - 1; t >= 0; t-- {
		if m[t] != 1 {
			bad = bad || e[t] != 0
			adv[t], ret[t] = 0, 0
			continue
		}
		vt := float64(v[t])
		var a float64
		if e[t] == 1 {
			a = float64(r[t]) + k.GTurn*s.nvT - vt + k.GLTurn*s.naT
			s.nvT, s.naT, s.seen = vt, a, true
			a += k.Delta * (k.GTok*s.nv - vt)
		} else {
			bad = bad || !s.seen
			a = float64(r[t]) + k.GTok*s.nv - vt + k.GLTok*s.na
		}
		fa, fr := float32(a), float32(a+vt)
		bad = bad || math.IsInf(float64(fa), 0) || math.IsInf(float64(fr), 0) || fa != fa || fr != fr
		adv[t], ret[t] = fa, fr
		s.nv, s.na = vt, a
	}
	return bad
}

// TestBiLevelRows8MatchesGoLoop: eight lanes on rows of random turn
// layouts (turn ends on valid tokens, masked observations between turns,
// masked padding, random ends and holes, some rows with errors: a turn end
// on a masked token, valid tokens after the last turn end), at places of
// their own, some entered with a state, run in calls of random numbers of
// blocks, both final-token rules. Each row gets the Go loop's bits and
// exactly the rows with an error or an overflow are flagged.
func TestBiLevelRows8MatchesGoLoop(t *testing.T) {
	if !HasAVX512 {
		t.Skip("no AVX-512 on this processor")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	const T = 83
	for trial := range 400 {
		r, v, m, e := make([]float32, 8*T), make([]float32, 8*T), make([]float32, 8*T), make([]float32, 8*T)
		for i := range r {
			r[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*3)
		}
		perm := rng.Perm(8)
		k := BiLevelRows8{GTok: 0.99, GLTok: 0.99 * 0.95, GTurn: 0.9, GLTurn: 0.9 * 0.8, Delta: float64(trial % 2)}
		var lens, tops, left [8]int
		var s0 [8]biState
		for q, row := range perm {
			lens[q] = 1 + rng.IntN(T&^7)
			mr, er := m[row*T:(row+1)*T], e[row*T:(row+1)*T]
			// Turns of valid tokens, each ending in a turn end, with
			// masked observations between them.
			for i := 0; i < lens[q]; {
				turn := 1 + rng.IntN(12)
				for j := i; j < min(i+turn, lens[q]); j++ {
					mr[j] = 1
				}
				end := min(i+turn, lens[q]) - 1
				er[end] = 1
				i = end + 1 + rng.IntN(6)
			}
			switch rng.IntN(8) {
			case 0: // a turn end on a masked token
				if i := rng.IntN(lens[q]); mr[i] == 0 {
					er[i] = 1
				}
			case 1: // valid tokens after the last turn end
				last := -1
				for i := range lens[q] {
					if mr[i] == 1 {
						last = i
					}
				}
				if last >= 0 {
					er[last] = 0
				}
			case 2: // a random flip of a valid token's end marker
				if i := rng.IntN(lens[q]); mr[i] == 1 {
					er[i] = 1 - er[i]
				}
			}
			if rng.IntN(3) == 0 {
				// Entered with a state: the tokens above were the Go tail's.
				lens[q] = max(lens[q]&^7, 8)
				s0[q] = biState{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.IntN(2) == 0}
			}
			tops[q] = (lens[q] + 7) &^ 7
			t0 := tops[q] - 8
			k.Off[q], k.D[q] = int64(4*(row*T+t0)), int32(lens[q]-tops[q])
			k.NV[q], k.NA[q], k.NVT[q], k.NAT[q] = s0[q].nv, s0[q].na, s0[q].nvT, s0[q].naT
			if s0[q].seen {
				k.Seen |= 1 << q
			}
			left[q] = tops[q] / 8
			for i := lens[q]; i < T; i++ {
				// Past a row's length: anything; never read as a token.
				r[row*T+i], v[row*T+i] = float32(math.NaN()), float32(math.Inf(1))
				m[row*T+i], e[row*T+i] = float32(rng.IntN(2)), float32(rng.IntN(2))
			}
		}
		if rng.IntN(4) == 0 && lens[3] >= 2 {
			row := perm[3]
			r[row*T+lens[3]/2], r[row*T+lens[3]/2-1] = 3.4e38, 3.4e38
		}
		adv, ret := make([]float32, 8*T), make([]float32, 8*T)
		for i := range adv {
			adv[i], ret[i] = 7, 7
		}
		k.R, k.V, k.M, k.E, k.Adv, k.Ret = &r[0], &v[0], &m[0], &e[0], &adv[0], &ret[0]
		var bad [8]bool
		for {
			least, src := math.MaxInt, -1
			for q := range 8 {
				if left[q] > 0 && left[q] < least {
					least, src = left[q], q
				}
			}
			if src < 0 {
				break
			}
			for q := range 8 {
				if left[q] == 0 {
					k.Off[q], k.D[q] = k.Off[src], k.D[src]
					k.NV[q], k.NA[q], k.NVT[q], k.NAT[q] = k.NV[src], k.NA[src], k.NVT[src], k.NAT[src]
					k.Seen = k.Seen&^(1<<q) | (k.Seen>>src&1)<<q
				}
			}
			k.N = int64(1 + rng.IntN(least))
			require.True(t, k.Run())
			for q := range 8 {
				if left[q] > 0 {
					left[q] -= int(k.N)
					bad[q] = bad[q] || k.Bad>>q&1 == 1
				}
			}
		}
		for q, row := range perm {
			wa, wr := make([]float32, T), make([]float32, T)
			o := row * T
			wantBad := goBiLevel(wa, wr, r[o:], v[o:], m[o:], e[o:], lens[q], &k, s0[q])
			for i := range T {
				wantA, wantR := wa[i], wr[i]
				switch {
				case i >= tops[q]:
					wantA, wantR = 7, 7
				case i >= lens[q]:
					wantA, wantR = 0, 0
				}
				require.Equal(t, math.Float32bits(wantA), math.Float32bits(adv[o+i]), "trial %d lane %d row %d token %d adv (len %d)", trial, q, row, i, lens[q])
				require.Equal(t, math.Float32bits(wantR), math.Float32bits(ret[o+i]), "trial %d lane %d row %d token %d ret", trial, q, row, i)
			}
			require.Equal(t, wantBad, bad[q], "trial %d lane %d: flag", trial, q)
		}
	}
}
