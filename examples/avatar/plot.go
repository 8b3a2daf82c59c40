package main

import (
	"fmt"
	"image/color"

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

// plotCurves draws held-out accuracy against generated completions for
// every run, with the target as a dashed line, into a PNG at path.
func plotCurves(path string, runs []RunResult, target float64) error {
	p := plot.New()
	p.Title.Text = "Held-out accuracy vs generated completions"
	p.X.Label.Text = "generated completions"
	p.Y.Label.Text = "held-out accuracy (greedy)"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	colors := []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}}
	maxX := 0.0
	for i, r := range runs {
		pts := make(plotter.XYs, len(r.Curve))
		for k, pt := range r.Curve {
			pts[k] = plotter.XY{X: float64(pt.Completions), Y: pt.Accuracy}
			maxX = max(maxX, float64(pt.Completions))
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = colors[i%len(colors)]
		line.Width = vg.Points(2)
		p.Add(line)
		p.Legend.Add(r.Name, line)
	}
	t, err := plotter.NewLine(plotter.XYs{{X: 0, Y: target}, {X: maxX, Y: target}})
	if err != nil {
		return err
	}
	t.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	t.Color = color.Gray{Y: 0x80}
	p.Add(t)
	p.Legend.Add(fmt.Sprintf("target %.2f", target), t)
	// The curves are flat at the top once every run is there: show the
	// climb, up to twice the completions the slowest run needed.
	reach := 0
	for _, r := range runs {
		if r.CompletionsToTarget < 0 {
			reach = 0
			break
		}
		reach = max(reach, r.CompletionsToTarget)
	}
	if reach > 0 {
		p.X.Max = min(maxX, 2*float64(reach))
	}
	p.X.Tick.Marker = integerTicks{}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(20)
	p.Legend.XOffs = -vg.Points(10)
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
