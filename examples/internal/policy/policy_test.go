package policy

import (
	"math"
	"math/rand/v2"
	"testing"
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
	if p.P[3] < 0.95 || p.Argmax() != 3 {
		t.Errorf("p = %v after training towards output 3", p.P)
	}
}
