package verifiers

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// SSIM constants of Wang, Bovik, Sheikh and Simoncelli (2004), "Image
// quality assessment: from error visibility to structural similarity",
// IEEE TIP 13(4): an 11×11 circular-symmetric Gaussian window of standard
// deviation 1.5, K1 = 0.01, K2 = 0.03, dynamic range L = 255.
const (
	ssimWindow = 11
	ssimSigma  = 1.5
	ssimC1     = (0.01 * 255) * (0.01 * 255)
	ssimC2     = (0.03 * 255) * (0.03 * 255)
)

// SSIM returns the mean structural similarity of two images of the same
// size, compared as grayscale: each pixel is composited over white and
// reduced to luma Y = 0.299R + 0.587G + 0.114B (ITU-R BT.601) on a 0–255
// scale. SSIM is computed with the constants of Wang et al. (2004): at each
// position where the 11×11 Gaussian window (σ = 1.5, normalised to sum 1)
// fits inside the image,
//
//	SSIM = (2μxμy + C1)(2σxy + C2) / ((μx² + μy² + C1)(σx² + σy² + C2)),
//
// C1 = (0.01·255)², C2 = (0.03·255)², moments weighted by the window, and
// the result is the mean over those positions (the "valid" region, as in
// the authors' reference code). An image narrower or shorter than 11 pixels
// uses a window of its smaller side, the Gaussian truncated to it. The
// value lies in [−1, 1] and is 1 for identical images. Images may hold at
// most MaxPixels pixels.
func SSIM(a, b image.Image) (float64, error) {
	r0, err := ssim(a, b)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func ssim(a, b image.Image) (float64, error) {
	if a == nil || b == nil {
		return 0, tensor.Errorf(tensor.ErrEmpty, "image", nil, "nil image")
	}
	ra, rb := a.Bounds(), b.Bounds()
	if ra.Dx() != rb.Dx() || ra.Dy() != rb.Dy() {
		return 0, tensor.Errorf(tensor.ErrShape, "b", nil, "%d×%d, want %d×%d like a", rb.Dx(), rb.Dy(), ra.Dx(), ra.Dy())
	}
	w, h := ra.Dx(), ra.Dy()
	if w <= 0 || h <= 0 {
		return 0, tensor.Errorf(tensor.ErrEmpty, "a", nil, "%d×%d image", w, h)
	}
	if int64(w)*int64(h) > MaxPixels {
		return 0, tensor.Errorf(ErrTooLarge, "a", nil, "%d×%d pixels, limit %d", w, h, MaxPixels)
	}
	return ssimGray(grayOf(a, w, h), grayOf(b, w, h), w, h), nil
}

// grayOf samples img on a w×h grid (nearest neighbour when its size
// differs) and returns the luma of each pixel composited over white.
func grayOf(img image.Image, w, h int) []float64 {
	r := img.Bounds()
	out := make([]float64, w*h)
	for y := range h {
		sy := r.Min.Y + y*r.Dy()/h
		for x := range w {
			sx := r.Min.X + x*r.Dx()/w
			out[y*w+x] = luma(img, sx, sy)
		}
	}
	return out
}

func luma(img image.Image, x, y int) float64 {
	var r, g, b, a uint32
	switch m := img.(type) {
	case *image.Gray:
		return float64(m.GrayAt(x, y).Y)
	case *image.RGBA:
		c := m.RGBAAt(x, y)
		r, g, b, a = uint32(c.R)*0x101, uint32(c.G)*0x101, uint32(c.B)*0x101, uint32(c.A)*0x101
	case *image.NRGBA:
		r, g, b, a = m.NRGBAAt(x, y).RGBA()
	default:
		r, g, b, a = img.At(x, y).RGBA()
	}
	// Premultiplied colour over a white background.
	bg := float64(0xffff - a)
	return (0.299*(float64(r)+bg) + 0.587*(float64(g)+bg) + 0.114*(float64(b)+bg)) / 257
}

// ssimGray computes mean SSIM of two w×h grayscale images. The Gaussian is
// separable: each input row is filtered horizontally once into a ring of
// the last win rows, and each output row sums that ring vertically, so the
// work is O(w·h·win) and the memory O(w·win).
func ssimGray(x, y []float64, w, h int) float64 {
	win := min(ssimWindow, w, h)
	g := make([]float64, win)
	c := float64(win-1) / 2
	var sum float64
	for k := range g {
		d := float64(k) - c
		g[k] = math.Exp(-d * d / (2 * ssimSigma * ssimSigma))
		sum += g[k]
	}
	for k := range g {
		g[k] /= sum
	}
	ow, oh := w-win+1, h-win+1
	// ring[m][slot] holds the horizontally filtered row for moment m:
	// x, y, x², y², xy.
	var ring [5][][]float64
	for m := range ring {
		ring[m] = make([][]float64, win)
		for s := range ring[m] {
			ring[m][s] = make([]float64, ow)
		}
	}
	var total float64
	for row := range h {
		slot := row % win
		xr, yr := x[row*w:(row+1)*w], y[row*w:(row+1)*w]
		for col := range ow {
			var sx, sy, sxx, syy, sxy float64
			for k, gk := range g {
				a, b := xr[col+k], yr[col+k]
				sx += gk * a
				sy += gk * b
				sxx += gk * a * a
				syy += gk * b * b
				sxy += gk * a * b
			}
			ring[0][slot][col], ring[1][slot][col] = sx, sy
			ring[2][slot][col], ring[3][slot][col], ring[4][slot][col] = sxx, syy, sxy
		}
		if row < win-1 {
			continue
		}
		first := row - win + 1
		var rowSum float64
		for col := range ow {
			var mx, my, mxx, myy, mxy float64
			for k, gk := range g {
				s := (first + k) % win
				mx += gk * ring[0][s][col]
				my += gk * ring[1][s][col]
				mxx += gk * ring[2][s][col]
				myy += gk * ring[3][s][col]
				mxy += gk * ring[4][s][col]
			}
			vx, vy, cxy := mxx-mx*mx, myy-my*my, mxy-mx*my
			rowSum += (2*mx*my + ssimC1) * (2*cxy + ssimC2) / ((mx*mx + my*my + ssimC1) * (vx + vy + ssimC2))
		}
		total += rowSum
	}
	return total / float64(ow*oh)
}

// RenderFunc rasterises SVG source. The library ships no SVG renderer; the
// caller supplies one (a rasteriser library, or a call out to a tool). It
// should honour ctx and render both sides at the same size.
type RenderFunc func(ctx context.Context, svg string) (image.Image, error)

// SVG scores generated SVG (LLaVA-OneVision-1.5 svgcode):
//
//	score = 0.5·max(0, SSIM(render(pred), render(ref))) + 0.25·(token Jaccard + tag-set Jaccard)
//
// with SSIM as documented on the SSIM function; when the renderer returns a
// prediction image of another size, it is resampled (nearest neighbour) to
// the reference's size. A prediction the renderer rejects gets an image
// score of 0; a reference it rejects is an error. Correct means score ≥
// "pass".
//
// The library ships no renderer. The Default registry's "svg" is SVG{}
// with Render nil: the image term is then 0, so
//
//	score = 0.25·(token Jaccard + tag-set Jaccard) ≤ 0.5
//
// with Reason saying that no renderer ran, and Correct only for a pass ≤
// that score. A caller with a renderer registers its own under another
// name, or replaces the Default registry:
//
//	reg.Register("svg", verifiers.SVG{Render: myRenderer}.New)
//
// Parameters: "extract" (default "slot", read as html reads it: the answer
// region, then its last ``` fence; "code" is the reading of earlier
// releases); "pass" (default 1).
type SVG struct {
	Render RenderFunc
}

// New is the Factory of v: it reads p once.
func (v SVG) New(p Params) (Verifier, error) { return v.rule().New(p) }

// Verify scores one response with parameters p, read on this call; New
// reads them once for many calls.
func (v SVG) Verify(ctx context.Context, response, reference string, p Params) (Result, error) {
	return v.rule().verify(ctx, response, reference, p)
}

func (v SVG) rule() *rule {
	return &rule{name: "svg", extract: ExtractSlot, region: true, shape: shapeCode, norm: normClean,
		params: []string{"pass"}, read: readPass, score: v.score}
}

// noRenderer is the Reason of an svg score computed without a renderer.
const noRenderer = "no SVG renderer: the image (SSIM) term is 0, the score is code overlap only"

func (v SVG) score(ctx context.Context, ans string, found bool, ref string, c *config) (Result, error) {
	if !found {
		return Result{}, nil
	}
	pass := c.pass
	if v.Render == nil {
		tok, tag := CodeOverlap(ans, ref)
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		score := clamp01(0.25 * (tok + tag))
		return Result{Score: score, Correct: score >= pass, Parsed: ans, Reason: noRenderer}, nil
	}
	refImg, err := v.Render(ctx, ref)
	if err != nil {
		if isContextErr(err) {
			return Result{}, err
		}
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "rendering: %v", err)
	}
	if refImg == nil {
		return Result{}, tensor.Errorf(ErrSyntax, "ref", nil, "renderer returned no image")
	}
	rb := refImg.Bounds()
	if rb.Dx() <= 0 || rb.Dy() <= 0 || int64(rb.Dx())*int64(rb.Dy()) > MaxPixels {
		return Result{}, tensor.Errorf(ErrTooLarge, "ref", nil, "rendered to %d×%d, want 1 to %d pixels", rb.Dx(), rb.Dy(), MaxPixels)
	}
	var imgScore float64
	predImg, err := v.Render(ctx, ans)
	switch {
	case isContextErr(err):
		return Result{}, err
	case err == nil && predImg != nil && !predImg.Bounds().Empty():
		w, h := rb.Dx(), rb.Dy()
		imgScore = max(0, ssimGray(grayOf(predImg, w, h), grayOf(refImg, w, h), w, h))
	}
	tok, tag := CodeOverlap(ans, ref)
	score := clamp01(0.5*imgScore + 0.25*(tok+tag))
	return Result{Score: score, Correct: score >= pass, Parsed: ans}, nil
}

// isContextErr reports whether err comes from a cancelled or expired
// context, which is never the prediction's fault.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
