package main

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// integerTicks labels the axis with whole numbers.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmt.Sprintf("%.0f", ticks[i].Value)
		}
	}
	return ticks
}

var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
}

// accuracyAt is the run's accuracy at its last evaluation with at most x
// completions generated: the curve as a step function of completions.
func accuracyAt(r RunResult, x float64) float64 {
	acc := r.Curve[0].Accuracy
	for _, pt := range r.Curve {
		if float64(pt.Completions) > x {
			break
		}
		acc = pt.Accuracy
	}
	return acc
}

// plotCurves draws accuracy against generated completions for every run:
// the median over seeds as a line and the band from the lowest to the
// highest seed shaded, with the target dashed, into a PNG at path.
func plotCurves(path string, all [][]RunResult, names []string, target float64) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Greedy accuracy vs generated completions: median over %d seeds, range shaded (ablations dashed, unshaded)", len(all))
	p.X.Label.Text = "generated completions"
	p.Y.Label.Text = "greedy accuracy over the prompt set"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	// The x axis spans grpo's budget (dapo, which draws extra groups,
	// runs on past it); each run is drawn up to the fewest completions
	// any of its seeds generated.
	maxX := 0.0
	last := make([]float64, len(names))
	for k, name := range names {
		last[k] = math.Inf(1)
		for _, runs := range all {
			last[k] = min(last[k], float64(runs[k].Curve[len(runs[k].Curve)-1].Completions))
		}
		if name != "dapo" {
			maxX = max(maxX, last[k])
		}
	}
	const points = 200
	for k, name := range names {
		c := palette[k%len(palette)]
		end := min(last[k], maxX)
		mid := make(plotter.XYs, points+1)
		lo, hi := make(plotter.XYs, points+1), make(plotter.XYs, points+1)
		for i := range mid {
			x := end * float64(i) / points
			ys := make([]float64, len(all))
			for s := range all {
				ys[s] = accuracyAt(all[s][k], x)
			}
			lo[i], hi[i] = plotter.XY{X: x, Y: ys[0]}, plotter.XY{X: x, Y: ys[0]}
			for _, y := range ys {
				lo[i].Y, hi[i].Y = min(lo[i].Y, y), max(hi[i].Y, y)
			}
			mid[i] = plotter.XY{X: x, Y: median(ys)}
		}
		ablation := strings.HasPrefix(name, "avatar_")
		if !ablation {
			band := append(lo, reverse(hi)...)
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return err
			}
			// Premultiplied alpha: a light tint of the run's colour.
			poly.Color = color.RGBA{R: c.R / 5, G: c.G / 5, B: c.B / 5, A: 0x33}
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		line, err := plotter.NewLine(mid)
		if err != nil {
			return err
		}
		line.Color = c
		line.Width = vg.Points(1.5)
		if ablation {
			line.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			line.Width = vg.Points(1)
		}
		p.Add(line)
		p.Legend.Add(name, line)
	}
	t, err := plotter.NewLine(plotter.XYs{{X: 0, Y: target}, {X: maxX, Y: target}})
	if err != nil {
		return err
	}
	t.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	t.Color = color.Gray{Y: 0x80}
	p.Add(t)
	p.Legend.Add(fmt.Sprintf("target %.2f", target), t)
	p.X.Tick.Marker = integerTicks{}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(20)
	p.Legend.XOffs = -vg.Points(10)
	p.X.Max = maxX
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

func reverse(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		out[i] = xy[len(xy)-1-i]
	}
	return out
}
