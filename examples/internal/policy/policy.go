// Package policy is the small neural network the examples train: a
// next-token (or value) model whose input is a set of active binary
// features.
//
// The forward pass is h = tanh(Σ_{f active} E[f] + b1), logits = h·W + b2,
// and for a policy p = softmax(logits). The parameters live in gonum
// matrices. Backward takes dLoss/dlogits; for a policy trained with package
// ppo, that is dLoss/dlogp_t·(onehot(token) − p), the gradient of the log
// softmax. Everything is float64 and single-threaded, so a seeded run
// repeats exactly.
package policy

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Model is a one-hidden-layer network over sparse binary features.
type Model struct {
	Features, Hidden, Outputs int
	// Embed is Features × Hidden: the first layer, one row per feature.
	Embed *mat.Dense
	// Bias1 is the hidden bias.
	Bias1 *mat.VecDense
	// Out is Hidden × Outputs: the output layer.
	Out *mat.Dense
	// Bias2 is the output bias.
	Bias2 *mat.VecDense
}

// New returns a model with small random weights drawn from rng.
func New(features, hidden, outputs int, rng *rand.Rand) *Model {
	m := &Model{
		Features: features, Hidden: hidden, Outputs: outputs,
		Embed: mat.NewDense(features, hidden, nil),
		Bias1: mat.NewVecDense(hidden, nil),
		Out:   mat.NewDense(hidden, outputs, nil),
		Bias2: mat.NewVecDense(outputs, nil),
	}
	fill := func(d []float64, scale float64) {
		for i := range d {
			d[i] = scale * rng.NormFloat64()
		}
	}
	fill(m.Embed.RawMatrix().Data, 0.3)
	fill(m.Out.RawMatrix().Data, 0.3/math.Sqrt(float64(hidden)))
	return m
}

// Clone returns a deep copy of m (a frozen reference or behaviour policy).
func (m *Model) Clone() *Model {
	c := *m
	c.Embed = mat.DenseCopyOf(m.Embed)
	c.Out = mat.DenseCopyOf(m.Out)
	c.Bias1 = mat.VecDenseCopyOf(m.Bias1)
	c.Bias2 = mat.VecDenseCopyOf(m.Bias2)
	return &c
}

// Pass holds one forward pass: what Backward needs.
type Pass struct {
	Feats  []int
	H      []float64 // hidden activations
	Logits []float64
	P      []float64 // softmax(Logits), for policies
}

// NewPass returns a Pass sized for m, to be reused across calls.
func (m *Model) NewPass() *Pass {
	return &Pass{H: make([]float64, m.Hidden), Logits: make([]float64, m.Outputs), P: make([]float64, m.Outputs)}
}

// Forward computes the hidden layer, the logits and their softmax for the
// active features feats (indices into Embed's rows).
func (m *Model) Forward(p *Pass, feats []int) {
	p.Feats = append(p.Feats[:0], feats...)
	e := m.Embed.RawMatrix()
	b1 := m.Bias1.RawVector().Data
	for j := range p.H {
		p.H[j] = b1[j]
	}
	for _, f := range feats {
		row := e.Data[f*e.Stride : f*e.Stride+m.Hidden]
		for j, w := range row {
			p.H[j] += w
		}
	}
	for j, v := range p.H {
		p.H[j] = math.Tanh(v)
	}
	o := m.Out.RawMatrix()
	copy(p.Logits, m.Bias2.RawVector().Data)
	for j, h := range p.H {
		row := o.Data[j*o.Stride : j*o.Stride+m.Outputs]
		for k, w := range row {
			p.Logits[k] += h * w
		}
	}
	softmax(p.P, p.Logits)
}

func softmax(dst, logits []float64) {
	mx := logits[0]
	for _, v := range logits {
		mx = max(mx, v)
	}
	var z float64
	for k, v := range logits {
		dst[k] = math.Exp(v - mx)
		z += dst[k]
	}
	for k := range dst {
		dst[k] /= z
	}
}

// Sample draws an output index from p.P.
func (p *Pass) Sample(rng *rand.Rand) int {
	u := rng.Float64()
	for k, q := range p.P {
		u -= q
		if u < 0 {
			return k
		}
	}
	return len(p.P) - 1
}

// Argmax returns the most likely output (the lowest index on ties).
func (p *Pass) Argmax() int {
	best := 0
	for k, q := range p.P {
		if q > p.P[best] {
			best = k
		}
	}
	return best
}

// Grads accumulates the gradient of every parameter of a Model.
type Grads struct {
	Embed, Out   []float64
	Bias1, Bias2 []float64
}

// NewGrads returns zero gradients shaped like m.
func (m *Model) NewGrads() *Grads {
	return &Grads{
		Embed: make([]float64, m.Features*m.Hidden), Out: make([]float64, m.Hidden*m.Outputs),
		Bias1: make([]float64, m.Hidden), Bias2: make([]float64, m.Outputs),
	}
}

// Zero resets g.
func (g *Grads) Zero() {
	clear(g.Embed)
	clear(g.Out)
	clear(g.Bias1)
	clear(g.Bias2)
}

// Backward adds to g the gradient of a loss whose derivative with respect
// to p's logits is dlogits.
func (m *Model) Backward(g *Grads, p *Pass, dlogits []float64) {
	o := m.Out.RawMatrix()
	for k, d := range dlogits {
		g.Bias2[k] += d
	}
	for j, h := range p.H {
		row := o.Data[j*o.Stride : j*o.Stride+m.Outputs]
		grow := g.Out[j*m.Outputs : (j+1)*m.Outputs]
		var dh float64
		for k, d := range dlogits {
			grow[k] += h * d
			dh += row[k] * d
		}
		dpre := dh * (1 - h*h)
		g.Bias1[j] += dpre
		for _, f := range p.Feats {
			g.Embed[f*m.Hidden+j] += dpre
		}
	}
}

// BackwardLogp adds the gradient of a loss whose derivative with respect to
// log p(token) is dlogp: through the log-softmax, dlogits = dlogp·(onehot −
// p).
func (m *Model) BackwardLogp(g *Grads, p *Pass, token int, dlogp float64, scratch []float64) {
	for k, q := range p.P {
		scratch[k] = -dlogp * q
	}
	scratch[token] += dlogp
	m.Backward(g, p, scratch[:m.Outputs])
}

// Adam is the Adam optimiser (Kingma and Ba 2015) with gradient-norm
// clipping.
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	// ClipNorm, if > 0, rescales the gradient to at most this L2 norm.
	ClipNorm float64
	m, v     *Grads
	t        int
}

// NewAdam returns Adam with the usual β's for m.
func NewAdam(m *Model, lr float64) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, ClipNorm: 1, m: m.NewGrads(), v: m.NewGrads()}
}

// Step applies one update from g to the model's parameters.
func (a *Adam) Step(model *Model, g *Grads) {
	a.t++
	pairs := []struct{ p, g, m, v []float64 }{
		{model.Embed.RawMatrix().Data, g.Embed, a.m.Embed, a.v.Embed},
		{model.Out.RawMatrix().Data, g.Out, a.m.Out, a.v.Out},
		{model.Bias1.RawVector().Data, g.Bias1, a.m.Bias1, a.v.Bias1},
		{model.Bias2.RawVector().Data, g.Bias2, a.m.Bias2, a.v.Bias2},
	}
	scale := 1.0
	if a.ClipNorm > 0 {
		var ss float64
		for _, x := range pairs {
			for _, v := range x.g {
				ss += v * v
			}
		}
		if n := math.Sqrt(ss); n > a.ClipNorm {
			scale = a.ClipNorm / n
		}
	}
	c1 := 1 - math.Pow(a.Beta1, float64(a.t))
	c2 := 1 - math.Pow(a.Beta2, float64(a.t))
	for _, x := range pairs {
		for i, gi := range x.g {
			gi *= scale
			x.m[i] = a.Beta1*x.m[i] + (1-a.Beta1)*gi
			x.v[i] = a.Beta2*x.v[i] + (1-a.Beta2)*gi*gi
			x.p[i] -= a.LR * (x.m[i] / c1) / (math.Sqrt(x.v[i]/c2) + a.Eps)
		}
	}
}

// LogProb returns log p(k) from the logits, stable where p(k) underflows.
func (p *Pass) LogProb(k int) float64 {
	mx := p.Logits[0]
	for _, v := range p.Logits {
		mx = max(mx, v)
	}
	var z float64
	for _, v := range p.Logits {
		z += math.Exp(v - mx)
	}
	return p.Logits[k] - mx - math.Log(z)
}
