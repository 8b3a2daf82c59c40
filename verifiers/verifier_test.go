package verifiers_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verify runs a built-in verifier from the Default registry.
func verify(t *testing.T, name, pred, ref string, p verifiers.Params) verifiers.Result {
	t.Helper()
	res, err := verifiers.Default.Verify(context.Background(), name, pred, ref, p)
	require.NoError(t, err, "%s(%q, %q, %v)", name, pred, ref, p)
	return res
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

func TestDefaultRegistryHoldsConformanceKeys(t *testing.T) {
	names := verifiers.Names()
	for _, k := range []string{"math", "choice", "number", "iou", "detection", "ocr", "html", "format", "format_tags", "answer"} {
		assert.True(t, slices.Contains(names, k), "Default lacks %q; has %v", k, names)
	}
	assert.True(t, slices.IsSorted(names), "Names = %v, not sorted", names)
}

func TestRegistry(t *testing.T) {
	var r verifiers.Registry
	one := verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Score: 1, Correct: true}, nil
	}))
	require.NoError(t, r.Register("one", one))
	for _, c := range []struct {
		name string
		f    verifiers.Factory
	}{{"one", one}, {"", one}, {"two words", one}, {"nil", nil}} {
		err := r.Register(c.name, c.f)
		assert.ErrorIs(t, err, verifiers.ErrParam, "Register(%q) = %v, want ErrParam", c.name, err)
	}
	_, err := r.New("missing", nil)
	require.ErrorIs(t, err, verifiers.ErrUnknown, "New(missing): want ErrUnknown listing \"one\"")
	assert.Contains(t, err.Error(), "one", "New(missing): want ErrUnknown listing \"one\"")
	_, err = r.New("one", verifiers.Params{"x": 1})
	assert.ErrorIs(t, err, verifiers.ErrParam, "New(one, params) = %v, want ErrParam: it takes none", err)
	res, err := r.Verify(context.Background(), "one", "", "", nil)
	require.NoError(t, err, "Verify(one) = %v", res)
	assert.Equal(t, float64(1), res.Score, "Verify(one) = %v", res)
	bad := verifiers.WithoutParams(verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Score: math.NaN()}, nil
	}))
	require.NoError(t, r.Register("bad", bad))
	_, err = r.Verify(context.Background(), "bad", "", "", nil)
	assert.Error(t, err, "Verify passed a NaN score on")
}

func TestRegistryConcurrent(t *testing.T) {
	var r verifiers.Registry
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			f, _ := verifiers.Default.Factory("choice")
			_ = r.Register(string(rune('a'+i)), f)
		}()
		go func() {
			defer wg.Done()
			_ = r.Names()
			_, _ = r.New("a", nil)
			_, _ = r.Verify(context.Background(), "a", "A", "A", nil)
		}()
	}
	wg.Wait()
	if n := len(r.Names()); n != 16 {
		t.Errorf("%d names after 16 registrations", n)
	}
}

func TestParams(t *testing.T) {
	var p verifiers.Params
	require.NoError(t, json.Unmarshal([]byte(`{"f": 0.5, "i": 3, "b": true, "s": "x", "n": null, "frac": 2.5}`), &p))
	v, err := p.Float("f", 9)
	require.NoError(t, err, "Float(f)")
	assert.Equal(t, 0.5, v, "Float(f)")
	v, err = p.Float("missing", 9)
	require.NoError(t, err, "Float(missing)")
	assert.Equal(t, float64(9), v, "Float(missing)")
	v, err = p.Float("n", 9)
	require.NoError(t, err, "Float(null)")
	assert.Equal(t, float64(9), v, "Float(null)")
	n, err := p.Int("i", 0)
	require.NoError(t, err, "Int(i)")
	assert.Equal(t, 3, n, "Int(i)")
	b, err := p.Bool("b", false)
	require.NoError(t, err, "Bool(b)")
	assert.True(t, b, "Bool(b)")
	s, err := p.String("s", "")
	require.NoError(t, err, "String(s)")
	assert.Equal(t, "x", s, "String(s)")
	for name, err := range map[string]error{
		"Float(s)":     second(p.Float("s", 0)),
		"Int(frac)":    second(p.Int("frac", 0)),
		"Bool(f)":      second(p.Bool("f", false)),
		"String(b)":    second(p.String("b", "")),
		"Enum(s)":      second(p.Enum("s", "a", "a", "b")),
		"Only(f)":      p.Only("f"),
		"Float(NaN)":   second(verifiers.Params{"x": math.NaN()}.Float("x", 0)),
		"Float(+Inf)":  second(verifiers.Params{"x": math.Inf(1)}.Float("x", 0)),
		"Float(bad #)": second(verifiers.Params{"x": json.Number("1x")}.Float("x", 0)),
	} {
		assert.ErrorIs(t, err, verifiers.ErrParam, "%s: err = %v, want ErrParam", name, err)
	}
	assert.NoError(t, p.Only("f", "i", "b", "s", "n", "frac"), "Only(all)")
	v, err = (verifiers.Params{"x": int64(7)}).Float("x", 0)
	require.NoError(t, err, "Float(int64)")
	assert.Equal(t, float64(7), v, "Float(int64)")
	_, err = p.Float("s", 0)
	assert.Contains(t, err.Error(), `params["s"]`, "the error names the key")
}

func second[T any](_ T, err error) error { return err }

func TestUnknownParamIsAnError(t *testing.T) {
	for _, name := range verifiers.Names() {
		_, err := verifiers.Default.Verify(context.Background(), name, "<answer>A</answer>", "A", verifiers.Params{"treshold": 0.5})
		assert.ErrorIs(t, err, verifiers.ErrParam, "%s with a misspelt parameter: err = %v, want ErrParam", name, err)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range verifiers.Names() {
		_, err := verifiers.Default.Verify(ctx, name, "A", "A", validParams[name])
		assert.ErrorIs(t, err, context.Canceled, "%s on a cancelled context: err =", name)
	}
}
