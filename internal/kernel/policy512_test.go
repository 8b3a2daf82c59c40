//go:build amd64 && !purego

package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExp32AVX512SameBits: the sixteen-lane exponential is the eight-lane
// one bit for bit, so it has its accuracy (TestExp32Accuracy: relative
// error at most 7.3e-8 against math.Exp), which this test also checks.
func TestExp32AVX512SameBits(t *testing.T) {
	if !HasAVX512 {
		t.Skip("no AVX-512 on this processor or build")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]float32, 0, 3<<16)
	for range cap(src) / 3 {
		src = append(src, float32((rng.Float64()*2-1)*20), float32(rng.Float64()*(88+87.3)-87.3),
			float32((rng.Float64()*2-1)*1e-3))
	}
	src = append(src[:len(src)&^15-16], -1000, -88, -87.8, -87.3, -80, 0, 80, 88, 0.5, 100,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30, 87.9, 1)
	d8, d16 := make([]float32, len(src)), make([]float32, len(src))
	exp32AVX2(d8, src)
	exp32AVX512(d16, src)
	worst := 0.0
	for i, x := range src {
		require.Equalf(t, math.Float32bits(d8[i]), math.Float32bits(d16[i]), "exp(%v): 16 lanes %v, 8 lanes %v", x, d16[i], d8[i])
		if x >= -87.3 && x <= 88 {
			worst = max(worst, relErr(float64(d16[i]), math.Exp(float64(x))))
		}
	}
	t.Logf("worst relative error %.3g over %d points", worst, len(src))
	require.LessOrEqual(t, worst, exp32Tol)
}

// policyCase is one configuration of the policy kernel's inputs.
type policyCase struct {
	prox, ref, tw bool
	kl            int64
	dual, klClamp float64
	capAt         float64
}

func (c policyCase) String() string {
	return fmt.Sprintf("prox=%v/ref=%v/tw=%v/kl=%d/dual=%v/klclamp=%v/cap=%v", c.prox, c.ref, c.tw, c.kl, c.dual, c.klClamp, c.capAt)
}

// policyCases covers every branch of the kernel: with and without a
// proximal policy (behaviour weights, with and without a cap), reference
// (each KL estimator, k3 with and without a clamp) and token weights.
func policyCases() []policyCase {
	inf := math.Inf(1)
	var cs []policyCase
	for _, prox := range []bool{false, true} {
		for _, tw := range []bool{false, true} {
			for kl := range int64(4) {
				cs = append(cs, policyCase{prox: prox, ref: kl > 0, tw: tw, kl: kl, dual: 3, klClamp: inf, capAt: inf})
			}
			cs = append(cs, policyCase{prox: prox, ref: true, tw: tw, kl: 3, dual: inf, klClamp: 0.05, capAt: 1.1})
		}
	}
	return cs
}

// policyBatch is a row of n tokens with the arrays the kernel reads.
type policyBatch struct {
	logp, old, adv, mask, prox, ref, tw, grad []float32
}

// newPolicyBatch draws a row: log-ratios spread wide enough to reach every
// clip bound and the log-ratio clamp and, with holes, a mask with runs of
// zeros (whole blocks of eight and sixteen among them) whose positions
// hold NaN, ±Inf or huge values.
func newPolicyBatch(rng *rand.Rand, n int, holes bool) *policyBatch {
	b := &policyBatch{}
	for _, p := range []*[]float32{&b.logp, &b.old, &b.adv, &b.mask, &b.prox, &b.ref, &b.tw, &b.grad} {
		*p = make([]float32, n)
	}
	garbage := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e38, -1e38, 200}
	for i := range n {
		b.old[i] = float32(-rng.ExpFloat64())
		b.logp[i] = b.old[i] + float32(rng.NormFloat64()*0.4)
		if rng.IntN(50) == 0 {
			b.logp[i] = b.old[i] + float32(rng.NormFloat64()*30) // past the clamp
		}
		b.prox[i] = b.old[i] + float32(rng.NormFloat64()*0.2)
		b.ref[i] = b.logp[i] + float32(rng.NormFloat64()*0.3)
		b.adv[i] = float32(rng.NormFloat64())
		if rng.IntN(10) == 0 {
			b.adv[i] = 0
		}
		b.tw[i] = float32(rng.Float64() * 2)
		b.mask[i] = 1
	}
	// Runs of masked tokens, some covering whole blocks.
	for range max(1, n/20) {
		if !holes {
			break
		}
		at, run := rng.IntN(n), 1+rng.IntN(24)
		for i := at; i < min(n, at+run); i++ {
			b.mask[i] = 0
			for _, p := range [][]float32{b.logp, b.old, b.adv, b.prox, b.ref, b.tw} {
				p[i] = garbage[rng.IntN(len(garbage))]
			}
		}
	}
	for i := range b.grad {
		b.grad[i] = float32(math.NaN()) // the kernel writes every position it covers
	}
	return b
}

func (b *policyBatch) kernel(c policyCase) *PolicyTokens {
	k := &PolicyTokens{
		Logp: &b.logp[0], Old: &b.old[0], Adv: &b.adv[0], Mask: &b.mask[0], Grad: &b.grad[0],
		N:  int64(len(b.logp)),
		Lo: Splat(0.8), Hi: Splat(1.28), Dual: Splat(c.dual), Clamp: Splat(20), NegClamp: Splat(-20),
		Beta: Splat(0.01), Coef: Splat(1.0 / 3), KLClamp: Splat(c.klClamp),
		CapAt: Splat(c.capAt), CapTo: Splat(min(c.capAt, 1)), BehaveMax: Splat(1),
	}
	if c.prox {
		k.Prox, k.HasProx = &b.prox[0], 1
	}
	if c.ref {
		k.Ref, k.HasRef, k.KL = &b.ref[0], 1, c.kl
	}
	if c.tw {
		k.TW, k.HasTW = &b.tw[0], 1
	}
	return k
}

// clone copies the batch with a fresh gradient.
func (b *policyBatch) clone() *policyBatch {
	c := *b
	c.grad = append([]float32(nil), b.grad...)
	return &c
}

// TestPolicyTokensAVX512SameBits: the sixteen-lane kernel gives the
// eight-lane kernel's bits — every float64 sum, every gradient — and the
// same counts, largest behaviour weight and verdict on bad lanes, on random
// rows of every length from 0 to 70 and some longer, odd ones, in every
// configuration.
func TestPolicyTokensAVX512SameBits(t *testing.T) {
	if !HasAVX512 {
		t.Skip("no AVX-512 on this processor or build")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	lengths := []int{1031, 4096 + 8, 333}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	compared := 0
	for _, c := range policyCases() {
		for _, n := range lengths {
			b8 := newPolicyBatch(rng, n, true)
			b16 := b8.clone()
			k8, k16 := b8.kernel(c), b16.kernel(c)
			require.True(t, k8.RunLanes(8))
			require.True(t, k16.RunLanes(16))
			where := fmt.Sprintf("%v/n=%d", c, n)
			require.Equalf(t, k8.Bad != 0, k16.Bad != 0, "%s: bad lanes %b (8 lanes), %b (16 lanes)", where, k8.Bad, k16.Bad)
			if k8.Bad != 0 {
				continue
			}
			compared++
			for _, s := range []struct {
				name   string
				a8, a6 [4]float64
			}{{"Policy", k8.Policy, k16.Policy}, {"KLSum", k8.KLSum, k16.KLSum}, {"NegDelta", k8.NegDelta, k16.NegDelta},
				{"Ratio", k8.Ratio, k16.Ratio}, {"Behave", k8.Behave, k16.Behave}} {
				for l := range 4 {
					require.Equalf(t, math.Float64bits(s.a8[l]), math.Float64bits(s.a6[l]), "%s: %s lane %d: %v (8 lanes), %v (16 lanes)", where, s.name, l, s.a8[l], s.a6[l])
				}
			}
			for _, s := range []struct {
				name   string
				c8, c6 [8]int32
			}{{"High", k8.High, k16.High}, {"Low", k8.Low, k16.Low}, {"DualN", k8.DualN, k16.DualN}, {"Capped", k8.Capped, k16.Capped}} {
				require.Equalf(t, Count(s.c8), Count(s.c6), "%s: %s", where, s.name)
			}
			require.Equalf(t, Max(k8.BehaveMax), Max(k16.BehaveMax), "%s: BehaveMax", where)
			for i := range n {
				require.Equalf(t, math.Float32bits(b8.grad[i]), math.Float32bits(b16.grad[i]), "%s: grad[%d]: %v (8 lanes), %v (16 lanes)", where, i, b8.grad[i], b16.grad[i])
			}
		}
	}
	require.Greater(t, compared, len(policyCases())*len(lengths)/2, "too few rows without bad lanes to compare")
}

// TestPolicyTokensAVX512Bad: a bad valid token — one that is not finite,
// has a negative weight, an exponential beyond float32 or a gradient that
// overflows — sets Bad in whichever of the sixteen lanes it sits, in the
// lower or upper half of a block, in the last block of eight, with both
// widths.
func TestPolicyTokensAVX512Bad(t *testing.T) {
	if !HasAVX512 {
		t.Skip("no AVX-512 on this processor or build")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	c := policyCase{prox: true, ref: true, tw: true, kl: 3, dual: 3, klClamp: math.Inf(1), capAt: math.Inf(1)}
	spoil := []struct {
		name string
		set  func(b *policyBatch, i int)
	}{
		{"NaN logp", func(b *policyBatch, i int) { b.logp[i] = float32(math.NaN()) }},
		{"Inf advantage", func(b *policyBatch, i int) { b.adv[i] = float32(math.Inf(1)) }},
		{"Inf ref", func(b *policyBatch, i int) { b.ref[i] = float32(math.Inf(-1)) }},
		{"negative weight", func(b *policyBatch, i int) { b.tw[i] = -0.5 }},
		{"behaviour weight beyond float32", func(b *policyBatch, i int) { b.prox[i] = b.old[i] + 95 }},
		{"k3 beyond float32", func(b *policyBatch, i int) { b.ref[i] = b.logp[i] + 95 }},
		{"gradient overflow", func(b *policyBatch, i int) { b.adv[i], b.tw[i], b.logp[i] = -3e38, 2, b.prox[i] }},
	}
	for _, s := range spoil {
		for _, at := range []int{0, 7, 8, 15, 16, 31, 40, 47} {
			for _, lanes := range []int{8, 16} {
				b := newPolicyBatch(rng, 48, false)
				k := b.kernel(c)
				require.True(t, k.RunLanes(lanes))
				require.Zerof(t, k.Bad, "%s at %d, %d lanes: clean row flagged", s.name, at, lanes)
				s.set(b, at)
				k = b.kernel(c)
				require.True(t, k.RunLanes(lanes))
				require.NotZerof(t, k.Bad, "%s at %d, %d lanes", s.name, at, lanes)
				// Masked, the same token is no longer bad.
				b.mask[at] = 0
				k = b.kernel(c)
				require.True(t, k.RunLanes(lanes))
				require.Zerof(t, k.Bad, "%s at %d, masked, %d lanes", s.name, at, lanes)
			}
		}
	}
}

func TestPolicyLanes(t *testing.T) {
	want := 0
	if HasAVX2 {
		want = 8
	}
	if HasAVX512 {
		want = 16
	}
	require.Equal(t, want, PolicyLanes)
	var k PolicyTokens
	require.False(t, k.RunLanes(4), "a width with no kernel")
	require.False(t, k.RunLanes(32), "a width with no kernel")
}

// TestCountMaskWidths: the sixteen- and eight-lane mask counts agree with
// the Go loop, on counts and on rejecting a bad entry wherever it sits
// (CountMask itself takes only the widest).
func TestCountMaskWidths(t *testing.T) {
	if !HasAVX512 {
		t.Skip("no AVX-512 on this processor or build")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for n := 0; n <= 256; n += 16 {
		m := make([]float32, n)
		for i := range m {
			if rng.IntN(3) > 0 {
				m[i] = 1
			}
		}
		want := CountMaskGo(m)
		require.Equalf(t, want, countMaskAVX2(m), "n=%d, 8 lanes", n)
		require.Equalf(t, want, countMaskAVX512(m), "n=%d, 16 lanes", n)
		for k := range n {
			old := m[k]
			m[k] = []float32{0.5, float32(math.NaN()), -1, 2}[k%4]
			require.Equalf(t, -1, countMaskAVX512(m), "n=%d: bad entry at %d", n, k)
			require.Equalf(t, -1, countMaskAVX2(m), "n=%d: bad entry at %d, 8 lanes", n, k)
			m[k] = old
		}
	}
}
