package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestGAERows8Layout pins the offsets the assembly reads.
func TestGAERows8Layout(t *testing.T) {
	var k GAERows8
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"R", unsafe.Offsetof(k.R), 0}, {"V", unsafe.Offsetof(k.V), 8}, {"Adv", unsafe.Offsetof(k.Adv), 16},
		{"Ret", unsafe.Offsetof(k.Ret), 24}, {"Off", unsafe.Offsetof(k.Off), 32}, {"D", unsafe.Offsetof(k.D), 96},
		{"N", unsafe.Offsetof(k.N), 128}, {"G", unsafe.Offsetof(k.G), 144},
		{"GL", unsafe.Offsetof(k.GL), 152}, {"NV", unsafe.Offsetof(k.NV), 160}, {"NA", unsafe.Offsetof(k.NA), 224},
		{"Bad", unsafe.Offsetof(k.Bad), 288},
	} {
		require.Equal(t, f.want, f.got, "offset of %s", f.name)
	}
}

// goTokens is the Go recursion of GAERows8 over tokens [0, n) of one row
// from the state (nv, na); it reports whether an output is not finite.
func goTokens(adv, ret, r, v []float32, n int, g, gl, nv, na float64) bool {
	bad := false
	for i := n - 1; i >= 0; i-- {
		vt := float64(v[i])
		a := float64(r[i]) + g*nv - vt + gl*na
		fa, fr := float32(a), float32(a+vt)
		bad = bad || math.IsInf(float64(fa), 0) || math.IsInf(float64(fr), 0) || fa != fa || fr != fr
		adv[i], ret[i] = fa, fr
		nv, na = vt, a
	}
	return bad
}

// TestGAERows8MatchesGoLoop: eight lanes, each on a row of its own at a
// place of its own (some rows entered with a state, as after a Go tail),
// run in calls of random numbers of blocks, a lane that is done repeating
// another as the scan of package gae does. Each row gets, bit for bit, what
// the Go recursion gives it, +0 from its length to the end of its top
// block, nothing written past that; only rows whose outputs overflow are
// flagged.
func TestGAERows8MatchesGoLoop(t *testing.T) {
	if !HasAVX512 {
		t.Skip("no AVX-512 on this processor")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	const T = 77
	for trial := range 300 {
		r, v := make([]float32, 8*T), make([]float32, 8*T)
		for i := range r {
			r[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*3)
		}
		perm := rng.Perm(8)
		k := GAERows8{G: 0.99, GL: 0.99 * 0.95}
		var lens, tops, left [8]int
		var nv0, na0 [8]float64
		for q, row := range perm {
			lens[q] = 1 + rng.IntN(T&^7)
			if rng.IntN(3) == 0 {
				// Entered with a state: the tokens above were the Go tail's.
				lens[q] = max(lens[q]&^7, 8)
				nv0[q], na0[q] = rng.NormFloat64(), rng.NormFloat64()
			}
			tops[q] = (lens[q] + 7) &^ 7
			t0 := tops[q] - 8
			k.Off[q], k.D[q] = int64(4*(row*T+t0)), int32(lens[q]-tops[q])
			k.NV[q], k.NA[q] = nv0[q], na0[q]
			left[q] = tops[q] / 8
			for i := lens[q]; i < T; i++ {
				// Past a row's length: never read.
				r[row*T+i], v[row*T+i] = float32(math.NaN()), float32(math.Inf(1))
			}
		}
		overflow := perm[3]
		if rng.IntN(4) != 0 || lens[3] < 2 {
			overflow = -1
		} else {
			r[overflow*T+lens[3]/2], r[overflow*T+lens[3]/2-1] = 3.4e38, 3.4e38
		}
		adv, ret := make([]float32, 8*T), make([]float32, 8*T)
		for i := range adv {
			adv[i], ret[i] = 7, 7
		}
		k.R, k.V, k.Adv, k.Ret = &r[0], &v[0], &adv[0], &ret[0]
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
					k.Off[q], k.D[q], k.NV[q], k.NA[q] = k.Off[src], k.D[src], k.NV[src], k.NA[src]
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
			wantBad := goTokens(wa, wr, r[row*T:], v[row*T:], lens[q], k.G, k.GL, nv0[q], na0[q])
			for i := range T {
				wantA, wantR := wa[i], wr[i]
				switch {
				case i >= tops[q]:
					wantA, wantR = 7, 7
				case i >= lens[q]:
					wantA, wantR = 0, 0
				}
				require.Equal(t, math.Float32bits(wantA), math.Float32bits(adv[row*T+i]), "trial %d lane %d row %d token %d adv (len %d)", trial, q, row, i, lens[q])
				require.Equal(t, math.Float32bits(wantR), math.Float32bits(ret[row*T+i]), "trial %d lane %d row %d token %d ret", trial, q, row, i)
			}
			require.Equal(t, wantBad, bad[q], "trial %d lane %d: flag", trial, q)
		}
		if overflow >= 0 {
			require.True(t, bad[3], "trial %d: overflow not flagged", trial)
		}
	}
}

// BenchmarkGAERows8 measures the kernel alone on eight full rows of 4096
// tokens, ns per token.
func BenchmarkGAERows8(b *testing.B) {
	const T = 4096
	r, v := make([]float32, 8*T), make([]float32, 8*T)
	for i := range r {
		r[i], v[i] = float32(i%7)-3, float32(i%5)-2
	}
	adv, ret := make([]float32, 8*T), make([]float32, 8*T)
	k := GAERows8{R: &r[0], V: &v[0], Adv: &adv[0], Ret: &ret[0], G: 1, GL: 0.95}
	for b.Loop() {
		for q := range 8 {
			// Lanes 32 tokens apart, as package gae starts them.
			k.Off[q], k.D[q] = int64(4*(T*q+T-8-32*q)), 0
		}
		k.N, k.NV, k.NA = T/8-28, [8]float64{}, [8]float64{}
		if !k.Run() {
			b.Skip("no AVX-512")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(8*T), "ns/token")
}

// BenchmarkGAETokens4 is BenchmarkGAERows8 for the four-row AVX2 kernel.
func BenchmarkGAETokens4(b *testing.B) {
	const T = 4096
	r, v := make([]float32, 8*T), make([]float32, 8*T)
	for i := range r {
		r[i], v[i] = float32(i%7)-3, float32(i%5)-2
	}
	adv, ret := make([]float32, 8*T), make([]float32, 8*T)
	k := GAETokens4{R: &r[0], V: &v[0], Adv: &adv[0], Ret: &ret[0], N: T, G: Splat64(1), GL: Splat64(0.95)}
	for b.Loop() {
		for h := range 2 {
			for q := range 4 {
				k.Off[q] = int64(4 * T * (4*h + q))
			}
			k.NV, k.NA = [4]float64{}, [4]float64{}
			if !k.Run() {
				b.Skip("no AVX2")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(8*T), "ns/token")
}
