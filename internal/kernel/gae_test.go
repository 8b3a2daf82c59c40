package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestGAETokens4Layout pins the offsets the assembly reads.
func TestGAETokens4Layout(t *testing.T) {
	var k GAETokens4
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"R", unsafe.Offsetof(k.R), 0}, {"V", unsafe.Offsetof(k.V), 8}, {"Adv", unsafe.Offsetof(k.Adv), 16},
		{"Ret", unsafe.Offsetof(k.Ret), 24}, {"Off", unsafe.Offsetof(k.Off), 32}, {"N", unsafe.Offsetof(k.N), 64},
		{"G", unsafe.Offsetof(k.G), 96}, {"GL", unsafe.Offsetof(k.GL), 128}, {"NV", unsafe.Offsetof(k.NV), 160},
		{"NA", unsafe.Offsetof(k.NA), 192}, {"Bad", unsafe.Offsetof(k.Bad), 224},
	} {
		if f.got != f.want {
			t.Errorf("offset of %s = %d, the assembly reads %d", f.name, f.got, f.want)
		}
	}
}

// TestGAETokens4MatchesGoLoop: each of the four rows gets, bit for bit,
// what the Go recursion gives it from the same state, and only the rows
// whose outputs overflow are flagged.
func TestGAETokens4MatchesGoLoop(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 on this processor")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 2, 7, 100} {
		for _, overflow := range []int{-1, 2} {
			const T = 103
			r, v := make([]float32, 4*T), make([]float32, 4*T)
			for i := range r {
				r[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*3)
			}
			if overflow >= 0 && n >= 2 {
				// Two large rewards in a row: a = 3.4e38 + γλ·3.4e38
				// overflows float32.
				r[overflow*T+n/2], r[overflow*T+n/2-1] = 3.4e38, 3.4e38
				r[overflow*T+n+1] = float32(math.Inf(1)) // past N: not read
			}
			adv, ret := make([]float32, 4*T), make([]float32, 4*T)
			g, gl := 0.99, 0.99*0.95
			// Kernel lane q is row perm[q]: rows in any order.
			perm := [4]int{2, 0, 3, 1}
			var off [4]int64
			for q, row := range perm {
				off[q] = int64(4 * T * row)
			}
			k := GAETokens4{R: &r[0], V: &v[0], Adv: &adv[0], Ret: &ret[0], Off: off, N: int64(n),
				G: [4]float64{g, g, g, g}, GL: [4]float64{gl, gl, gl, gl}, NV: [4]float64{0, 1.5, -2, 0.25}, NA: [4]float64{0, -0.5, 3, 1e-3}}
			nv0, na0 := k.NV, k.NA
			if !k.Run() {
				t.Fatal("kernel did not run")
			}
			if (k.Bad != 0) != (overflow >= 0 && n >= 2) {
				t.Fatalf("n=%d, overflow in row %d: Bad = %b", n, overflow, k.Bad)
			}
			for q, row := range perm {
				nv, na := nv0[q], na0[q]
				bad := false
				for i := n - 1; i >= 0; i-- {
					vt := float64(v[row*T+i])
					a := float64(r[row*T+i]) + g*nv - vt + gl*na
					fa, fr := float32(a), float32(a+vt)
					bad = bad || math.IsInf(float64(fa), 0) || math.IsInf(float64(fr), 0) || fa != fa || fr != fr
					if math.Float32bits(adv[row*T+i]) != math.Float32bits(fa) || math.Float32bits(ret[row*T+i]) != math.Float32bits(fr) {
						t.Fatalf("n=%d row %d token %d: kernel %v/%v, Go %v/%v", n, row, i, adv[row*T+i], ret[row*T+i], fa, fr)
					}
					nv, na = vt, a
				}
				for i := n; i < T; i++ {
					if adv[row*T+i] != 0 || ret[row*T+i] != 0 {
						t.Fatalf("n=%d row %d: wrote token %d past N", n, q, i)
					}
				}
				if math.Float64bits(k.NV[q]) != math.Float64bits(nv) || math.Float64bits(k.NA[q]) != math.Float64bits(na) {
					t.Fatalf("n=%d row %d: state %v/%v, Go %v/%v", n, q, k.NV[q], k.NA[q], nv, na)
				}
				if got := k.Bad>>q&1 == 1; got != bad {
					t.Fatalf("n=%d row %d: flagged %v, Go loop overflows: %v", n, q, got, bad)
				}
			}
		}
	}
}
