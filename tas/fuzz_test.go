package tas_test

import (
	"errors"
	"math"
	"testing"

	"github.com/rlpost/rlpost/tas"
	"github.com/rlpost/rlpost/tensor"
)

var specials = [...]float64{math.NaN(), math.Inf(1), math.Inf(-1), 3e38, -3e38, 1e39, math.Copysign(0, -1), 0.5, 2, -1}

// fuzzInput turns fuzzer bytes into a mask (mostly 0 and 1), per-token and
// per-row advantages (sometimes NaN, infinite or huge) and a configuration.
type fuzzInput struct {
	mask, adv tensor.Batch[float64]
	seq       []float64
	cfg       tas.Config
	dstShape  tensor.Shape
}

func decode(data []byte) fuzzInput {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	value := func() float64 {
		b := next()
		if b >= 246 {
			return specials[b-246]
		}
		return float64(int(b)-123) / 8
	}
	B, T := int(next()%5), int(next()%14)
	var in fuzzInput
	in.cfg.Shape = tas.Curve(next() % 6) // 5 is not a Curve
	if b := next(); b >= 246 {
		in.cfg.Lambda = specials[b-246]
	} else {
		in.cfg.Lambda = float64(b) / 100
	}
	in.mask, in.adv = tensor.MustNew[float64](B, T), tensor.MustNew[float64](B, T)
	for i := range B * T {
		switch b := next(); {
		case b < 100:
		case b < 250:
			in.mask.Data[i] = 1
		default:
			in.mask.Data[i] = specials[6+int(b-250)%4] // −0, 0.5, 2, −1
		}
		in.adv.Data[i] = value()
	}
	in.seq = make([]float64, B)
	for i := range in.seq {
		in.seq[i] = value()
	}
	in.dstShape = in.mask.Shape
	if next() == 1 {
		in.dstShape.T++
	}
	return in
}

// reference returns the weights of a mask row that holds only 0 and 1.
func reference(m []float64, cfg tas.Config) []float64 {
	L := 0
	for _, v := range m {
		if v == 1 {
			L++
		}
	}
	w := make([]float64, len(m))
	k := 0
	for t, v := range m {
		if v != 1 {
			continue
		}
		w[t] = 1
		if L > 1 {
			x := 2*float64(k)/float64(L-1) - 1
			switch cfg.Shape {
			case tas.Parabolic:
				w[t] = 1 + cfg.Lambda*x*x
			case tas.Inverse:
				w[t] = 1 + cfg.Lambda*(1-x*x)
			case tas.LinearDecay:
				w[t] = 1 + cfg.Lambda*(1-float64(k)/float64(L-1))
			case tas.LinearIncline:
				w[t] = 1 + cfg.Lambda*float64(k)/float64(L-1)
			}
		}
		k++
	}
	return w
}

// inputOK reports whether the configuration, shape and mask are valid.
func (in fuzzInput) inputOK() bool {
	if in.cfg.Validate() != nil || in.dstShape != in.mask.Shape {
		return false
	}
	for _, v := range in.mask.Data {
		if v != 0 && v != 1 {
			return false
		}
	}
	return true
}

// check runs op in storage type F and compares with the reference: an
// error exactly when the input is invalid or a result does not fit F.
func check[F tensor.Float](t *testing.T, in fuzzInput, op string) {
	conv := func(x tensor.Batch[float64]) tensor.Batch[F] {
		y := tensor.MustNew[F](x.B, x.T)
		for i, v := range x.Data {
			y.Data[i] = F(v)
		}
		return y
	}
	mask, adv := conv(in.mask), conv(in.adv)
	seq := make([]F, len(in.seq))
	for i, v := range in.seq {
		seq[i] = F(v)
	}
	dst := tensor.MustNew[F](in.dstShape.B, in.dstShape.T)
	var err error
	switch op {
	case "weights":
		err = tas.Weights(dst, mask, in.cfg)
	case "sequence":
		err = tas.ApplySequence(dst, seq, mask, in.cfg)
	case "tokens":
		err = tas.ApplyTokens(dst, adv, mask, in.cfg)
	}
	var z F
	if !in.inputOK() {
		var ae *tensor.ArgError
		if !errors.As(err, &ae) {
			t.Fatalf("%s %T: invalid input gave %v, want an *tensor.ArgError", op, z, err)
		}
		return
	}
	ok := true
	want := make([]float64, len(dst.Data))
	for b := range in.mask.B {
		w := reference(in.mask.Row(b), in.cfg)
		for i, m := range in.mask.Row(b) {
			if m == 0 {
				continue
			}
			var a float64
			switch op {
			case "weights":
				a = 1
			case "sequence":
				a = float64(seq[b])
			case "tokens":
				a = float64(adv.At(b, i))
			}
			x := F(w[i] * a)
			ok = ok && tensor.IsFinite(x)
			want[b*in.mask.T+i] = float64(x)
		}
	}
	if (err == nil) != ok {
		t.Fatalf("%s %T: error %v, reference finds the input valid: %v", op, z, err, ok)
	}
	if err != nil {
		return
	}
	for i, x := range dst.Data {
		if math.Abs(float64(x)-want[i]) > 1e-6*math.Abs(want[i]) {
			t.Fatalf("%s %T at %d: %v, reference %v", op, z, i, x, want[i])
		}
	}
}

func addSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 5, 0, 30, 200, 130, 200, 100, 0, 1, 200, 1, 200, 240, 0, 5, 200, 6, 200, 7, 120, 124, 0})
	f.Add([]byte{1, 4, 2, 255, 200, 246, 0, 1, 200, 3, 200, 4, 130, 0})
}

// fuzzOp fuzzes op in both storage types.
func fuzzOp(f *testing.F, op string) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := decode(data)
		check[float64](t, in, op)
		check[float32](t, in, op)
	})
}

func FuzzWeights(f *testing.F)       { fuzzOp(f, "weights") }
func FuzzApplySequence(f *testing.F) { fuzzOp(f, "sequence") }
func FuzzApplyTokens(f *testing.F)   { fuzzOp(f, "tokens") }
