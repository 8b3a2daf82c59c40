package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBackwardLogpMatchesFiniteDifferences checks the gradient of
// c·log p(token) with respect to every parameter.
func TestBackwardLogpMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := New(7, 5, 4, rng)
	feats := []int{1, 4, 6}
	const token, c, h = 2, 0.7, 1e-6
	loss := func() float64 {
		p := m.NewPass()
		m.Forward(p, feats)
		return c * math.Log(p.P[token])
	}
	p := m.NewPass()
	m.Forward(p, feats)
	g := m.NewGrads()
	m.BackwardLogp(g, p, token, c, make([]float64, m.Outputs))
	for _, x := range []struct {
		name  string
		param []float64
		grad  []float64
	}{
		{"Embed", m.Embed.RawMatrix().Data, g.Embed}, {"Out", m.Out.RawMatrix().Data, g.Out},
		{"Bias1", m.Bias1.RawVector().Data, g.Bias1}, {"Bias2", m.Bias2.RawVector().Data, g.Bias2},
	} {
		for i := range x.param {
			old := x.param[i]
			x.param[i] = old + h
			up := loss()
			x.param[i] = old - h
			down := loss()
			x.param[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(fd-x.grad[i]) > 1e-7+1e-6*math.Abs(fd) {
				t.Errorf("%s[%d]: grad %v, finite difference %v", x.name, i, x.grad[i], fd)
			}
		}
	}
}

// TestAdamLearnsATarget: a few hundred Adam steps make the model put most
// of its mass on one output.
func TestAdamLearnsATarget(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	m := New(3, 8, 5, rng)
	opt := NewAdam(m, 0.05)
	g := m.NewGrads()
	p := m.NewPass()
	scratch := make([]float64, 5)
	for range 200 {
		g.Zero()
		m.Forward(p, []int{0, 2})
		m.BackwardLogp(g, p, 3, -1, scratch) // minimise −log p(3)
		opt.Step(m, g)
	}
	m.Forward(p, []int{0, 2})
	assert.GreaterOrEqual(t, p.P[3], 0.95, "p = %v after training towards output 3", p.P)
	assert.Equal(t, 3, p.Argmax(), "p = %v after training towards output 3", p.P)
}

// TestLogProb checks LogProb against log(P) where P is accurate, and that
// it stays finite where P underflows to 0.
func TestLogProb(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logits []float64
	}{
		{"moderate", []float64{0.3, -1.2, 2.5, 0}},
		{"large", []float64{800, 0, -5, 799}},
		{"one output", []float64{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pass{Logits: tc.logits, P: make([]float64, len(tc.logits))}
			softmax(p.P, p.Logits)
			for k := range tc.logits {
				got := p.LogProb(k)
				require.False(t, math.IsNaN(got), "LogProb(%d) = %v", k, got)
				require.False(t, math.IsInf(got, 0), "LogProb(%d) = %v", k, got)
				if p.P[k] > 1e-300 {
					if want := math.Log(p.P[k]); math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
						t.Errorf("LogProb(%d) = %v, want %v", k, got, want)
					}
				}
			}
			if tc.name == "large" {
				// log(e^0/(e^800 + e^799 + …)) = −800 − log(1 + 1/e) to double precision.
				if got, want := p.LogProb(1), -800-math.Log1p(math.Exp(-1)); math.Abs(got-want) > 1e-9 {
					t.Errorf("LogProb(1) = %v, want %v", got, want)
				}
			}
		})
	}
}
