package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotCurves draws each estimator's evaluation success against updates:
// the mean over seeds as a line, the range from the lowest to the highest
// seed shaded.
func plotCurves(path string, rep *report, cfg config) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("FrozenLake, terminal reward: success vs updates (mean and range over %d seeds)", cfg.Seeds)
	if !cfg.Sparse {
		p.Title.Text = fmt.Sprintf("FrozenLake: success vs updates (mean and range over %d seeds)", cfg.Seeds)
	}
	p.X.Label.Text = "PPO updates"
	p.Y.Label.Text = "success on held-out maps (greedy)"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	colors := []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}
	for k, est := range []estimator{tokenGAE, biLevelGAE} {
		r := rep.Runs[est.String()]
		n := len(r.Curve)
		mid, lo, hi := make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n)
		for i := range n {
			x := float64(r.Updates[i])
			mid[i] = plotter.XY{X: x, Y: r.Curve[i]}
			lo[i], hi[i] = plotter.XY{X: x, Y: 1}, plotter.XY{X: x, Y: 0}
			for _, c := range r.Curves {
				lo[i].Y, hi[i].Y = min(lo[i].Y, c[i]), max(hi[i].Y, c[i])
			}
		}
		band := append(lo, reversed(hi)...)
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return err
		}
		c := colors[k]
		poly.Color = color.RGBA{R: c.R / 5, G: c.G / 5, B: c.B / 5, A: 0x33} // premultiplied: a 20 % tint
		poly.LineStyle.Width = 0
		p.Add(poly)
		line, err := plotter.NewLine(mid)
		if err != nil {
			return err
		}
		line.Color, line.Width = c, vg.Points(1.5)
		p.Add(line)
		label := fmt.Sprintf("token GAE (γ %g, λ %g)", cfg.Token.Gamma, cfg.Token.Lambda)
		if est == biLevelGAE {
			label = fmt.Sprintf("Bi-Level GAE (γ_turn %g, λ_turn %g)", cfg.BiLevel.GammaTurn, cfg.BiLevel.LambdaTurn)
		}
		p.Legend.Add(label, line)
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(20)
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

func reversed(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		out[i] = xy[len(xy)-1-i]
	}
	return out
}
