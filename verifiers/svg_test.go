package verifiers_test

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func grayImage(w, h int, f func(x, y int) uint8) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetGray(x, y, color.Gray{Y: f(x, y)})
		}
	}
	return img
}

// naiveSSIM is the textbook definition, window by window in two
// dimensions, to check the separable ring-buffer version against.
func naiveSSIM(a, b *image.Gray) float64 {
	w, h := a.Bounds().Dx(), a.Bounds().Dy()
	win := min(11, w, h)
	g := make([][]float64, win)
	var sum float64
	c := float64(win-1) / 2
	for i := range g {
		g[i] = make([]float64, win)
		for j := range g[i] {
			g[i][j] = math.Exp(-((float64(i)-c)*(float64(i)-c) + (float64(j)-c)*(float64(j)-c)) / (2 * 1.5 * 1.5))
			sum += g[i][j]
		}
	}
	const c1, c2 = 6.5025, 58.5225
	var total float64
	n := 0
	for y0 := 0; y0+win <= h; y0++ {
		for x0 := 0; x0+win <= w; x0++ {
			var mx, my, mxx, myy, mxy float64
			for i := range win {
				for j := range win {
					wt := g[i][j] / sum
					p := float64(a.GrayAt(x0+j, y0+i).Y)
					q := float64(b.GrayAt(x0+j, y0+i).Y)
					mx += wt * p
					my += wt * q
					mxx += wt * p * p
					myy += wt * q * q
					mxy += wt * p * q
				}
			}
			vx, vy, cxy := mxx-mx*mx, myy-my*my, mxy-mx*my
			total += (2*mx*my + c1) * (2*cxy + c2) / ((mx*mx + my*my + c1) * (vx + vy + c2))
			n++
		}
	}
	return total / float64(n)
}

func TestSSIM(t *testing.T) {
	// Constant images: σ = 0, so SSIM = (2ab + C1)/(a² + b² + C1).
	a := grayImage(16, 16, func(int, int) uint8 { return 100 })
	b := grayImage(16, 16, func(int, int) uint8 { return 150 })
	got, err := verifiers.SSIM(a, b)
	want := (2*100*150 + 6.5025) / (100*100 + 150*150 + 6.5025)
	require.NoError(t, err, "SSIM(constant 100, constant 150)")
	assert.InDelta(t, want, got, 1e-12, "SSIM(constant 100, constant 150)")
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range [][2]int{{11, 11}, {23, 17}, {40, 12}, {7, 30}, {1, 5}, {3, 3}} {
		w, h := size[0], size[1]
		x := grayImage(w, h, func(int, int) uint8 { return uint8(rng.IntN(256)) })
		y := grayImage(w, h, func(i, j int) uint8 { return uint8(min(255, int(x.GrayAt(i, j).Y)/2+rng.IntN(128))) })
		got, err := verifiers.SSIM(x, y)
		want := naiveSSIM(x, y)
		require.NoError(t, err, "%d×%d: SSIM naive", w, h)
		assert.InDelta(t, want, got, 1e-9, "%d×%d: SSIM naive", w, h)
		if self, _ := verifiers.SSIM(x, x); math.Abs(self-1) > 1e-12 {
			t.Errorf("%d×%d: SSIM(x, x) = %v", w, h, self)
		}
		assert.GreaterOrEqual(t, got, -1.0, "%d×%d: SSIM outside [−1, 1]", w, h)
		assert.LessOrEqual(t, got, 1.0, "%d×%d: SSIM outside [−1, 1]", w, h)
	}
	// Colour images go through luma over white: opaque black RGBA equals gray 0,
	// transparent equals white.
	rgba := image.NewRGBA(image.Rect(0, 0, 12, 12))
	for i := range 6 {
		for j := range 12 {
			rgba.Set(i, j, color.RGBA{A: 255})
		}
	}
	gray := grayImage(12, 12, func(x, _ int) uint8 {
		if x < 6 {
			return 0
		}
		return 255
	})
	s, err := verifiers.SSIM(rgba, gray)
	require.NoError(t, err, "SSIM(RGBA, its gray)")
	assert.InDelta(t, 1, s, 1e-12, "SSIM(RGBA, its gray)")
	_, err = verifiers.SSIM(a, grayImage(15, 16, func(int, int) uint8 { return 0 }))
	assert.ErrorIs(t, err, tensor.ErrShape, "SSIM of different sizes")
	_, err = verifiers.SSIM(nil, a)
	assert.Error(t, err, "SSIM(nil) accepted")
	_, err = verifiers.SSIM(image.NewGray(image.Rect(0, 0, 0, 0)), image.NewGray(image.Rect(0, 0, 0, 0)))
	assert.Error(t, err, "SSIM of empty images accepted")
}

// boxRenderer draws the last [x1,y1,x2,y2] of the source in black on a
// white canvas of the given size; "fail" in the source makes it fail.
func boxRenderer(w, h int) verifiers.RenderFunc {
	return func(ctx context.Context, svg string) (image.Image, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, ok := verifiers.ParseBox(svg)
		if !ok {
			return nil, errors.New("no shape")
		}
		return grayImage(w, h, func(x, y int) uint8 {
			if float64(x) >= b[0] && float64(x) < b[2] && float64(y) >= b[1] && float64(y) < b[3] {
				return 0
			}
			return 255
		}), nil
	}
}

func TestSVG(t *testing.T) {
	ref := `<svg><rect d="[4,4,20,20]"/></svg>`
	v := verifiers.SVG{Render: boxRenderer(32, 32)}
	ctx := context.Background()
	res, err := v.Verify(ctx, "<answer>```svg\n"+ref+"\n```</answer>", ref, nil)
	require.NoError(t, err, "identical SVG: %+v", res)
	assert.Equal(t, float64(1), res.Score, "identical SVG: %+v", res)
	assert.True(t, res.Correct, "identical SVG: %+v", res)
	// Unrenderable prediction: image score 0, tokens and tags still count.
	res, err = v.Verify(ctx, `<svg><rect/></svg>`, ref, nil)
	tok, tag := verifiers.CodeOverlap(`<svg><rect/></svg>`, ref)
	require.NoError(t, err, "unrenderable SVG: %+v; want %v", res, 0.25*(tok+tag))
	assert.True(t, near(res.Score, 0.25*(tok+tag)), "unrenderable SVG: %+v; want %v", res, 0.25*(tok+tag))
	assert.False(t, res.Correct, "unrenderable SVG: %+v; want %v", res, 0.25*(tok+tag))
	// A shifted shape: SSIM strictly between 0 and 1.
	res, err = v.Verify(ctx, `<svg><rect d="[6,4,22,20]"/></svg>`, ref, nil)
	if err != nil || !(res.Score > 0.5 && res.Score < 1) {
		t.Errorf("shifted SVG: %+v, %v", res, err)
	}
	// Renderings of another size are resampled to the reference's.
	sized := verifiers.SVG{Render: func(ctx context.Context, svg string) (image.Image, error) {
		if svg == ref {
			return boxRenderer(32, 32)(ctx, svg)
		}
		return boxRenderer(64, 64)(ctx, `[8,8,40,40]`)
	}}
	res, err = sized.Verify(ctx, ref+" ", ref, nil)
	require.NoError(t, err, "resampled identical SVG: %+v", res)
	assert.Equal(t, float64(1), res.Score, "resampled identical SVG: %+v", res)
	_, err = v.Verify(ctx, ref, "<svg/>", nil)
	assert.ErrorIs(t, err, verifiers.ErrSyntax, "unrenderable reference")
	// Without a renderer (the Default registry's "svg") the image term is
	// 0: an identical answer scores 0.5 from code overlap, with a reason.
	res, err = verifiers.Default.Verify(ctx, "svg", ref, ref, nil)
	require.NoError(t, err, "no renderer: %+v", res)
	assert.Equal(t, 0.5, res.Score, "no renderer: %+v", res)
	assert.False(t, res.Correct, "no renderer: %+v", res)
	assert.NotEmpty(t, res.Reason, "no renderer: %+v", res)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = v.Verify(cancelled, ref, ref, nil)
	assert.ErrorIs(t, err, context.Canceled, "cancelled")
}
