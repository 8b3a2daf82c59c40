package verifiers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every verifier's cancelled-context error reads "verifiers: name: context
// canceled" and wraps context.Canceled; math used to return it bare.
func TestCancelledContextPrefix(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range verifiers.Names() {
		v, err := verifiers.New(name, validParams[name])
		require.NoError(t, err)
		_, err = v.Verify(ctx, "A", "A")
		want := "verifiers: " + name + ": context canceled"
		require.Error(t, err, "%s on a cancelled context, wrapping context.Canceled", name)
		assert.Equal(t, want, err.Error(), "%s on a cancelled context, wrapping context.Canceled", name)
		assert.ErrorIs(t, err, context.Canceled, "%s on a cancelled context, wrapping context.Canceled", name)
	}
}

// A misspelt or out-of-range math parameter is a *tensor.ArgError naming
// it, wrapping ErrParam, and ErrRange exactly when its text says "out of
// range". It used to be flattened with %v.
func TestMathParamErrors(t *testing.T) {
	for _, c := range []struct {
		params  verifiers.Params
		arg     string
		inRange bool
	}{
		{verifiers.Params{"precison": 2.0}, `params["precison"]`, false},
		{verifiers.Params{"strict": "yes"}, `params["strict"]`, false},
		{verifiers.Params{"precision": 40.0}, `params["precision"]`, true},
		{verifiers.Params{"timeout_ms": -1.0}, `params["timeout_ms"]`, true},
		{verifiers.Params{"extract": "slot"}, `params["extract"]`, false},
	} {
		_, err := verifiers.New("math", c.params)
		var ae *tensor.ArgError
		if !errors.As(err, &ae) || ae.Arg != c.arg || !errors.Is(err, verifiers.ErrParam) {
			t.Errorf("math %v: %v, want a *tensor.ArgError for %s wrapping ErrParam", c.params, err, c.arg)
			continue
		}
		assert.Equal(t, c.inRange, errors.Is(err, tensor.ErrRange), "math %v: errors.Is(ErrRange) and the text must agree", c.params)
		assert.Equal(t, c.inRange, strings.Contains(err.Error(), "out of range"), "math %v: errors.Is(ErrRange) and the text must agree", c.params)
		if !strings.HasPrefix(err.Error(), "verifiers: math: params[") {
			t.Errorf("math %v: %q, want the one prefix \"verifiers: math: \"", c.params, err)
		}
	}
}

// A trusted reference that does not parse is an error wrapping ErrSyntax
// in every verifier that parses its reference, never a 0 for every
// response (which silently erases a group's advantage).
func TestUnparseableReference(t *testing.T) {
	for name, refs := range map[string][]string{
		"math":          {`\frac{`, `}}}`, `\frac{1}{2`, `\sqrt{}}`},
		"number":        {"n/a", ""},
		"choice":        {"123", ""},
		"iou":           {"no box", "[1, 2, 3]", "[5, 5, 1, 1]"},
		"detection":     {`[{"label": "cat"`, "cats", `[{"label": "cat", "bbox": [5, 5, 1, 1]}]`},
		"ocr":           {`["a", `, `[]`},
		"temporal_iou":  {"soon", "[2, 1]"},
		"structured_f1": {"[1]", "{"},
	} {
		v, err := verifiers.New(name, nil)
		require.NoError(t, err)
		for _, ref := range refs {
			res, err := v.Verify(context.Background(), "<answer>1</answer>", ref)
			var ae *tensor.ArgError
			require.ErrorIs(t, err, verifiers.ErrSyntax, "%s with reference %q: %+v; want a *tensor.ArgError for ref wrapping ErrSyntax", name, ref, res)
			require.ErrorAs(t, err, &ae, "%s with reference %q: %+v; want a *tensor.ArgError for ref wrapping ErrSyntax", name, ref, res)
			assert.Equal(t, "ref", ae.Arg, "%s with reference %q: %+v; want a *tensor.ArgError for ref wrapping ErrSyntax", name, ref, res)
		}
	}
	// Plain text that is not LaTeX stays an answer compared as text.
	_, err := verifiers.Default.Verify(context.Background(), "math", `\boxed{7}`, "12:00", nil)
	assert.NoError(t, err, "math with the text reference 12:00")
}

// New reads the parameters once: changing the map afterwards changes
// nothing, and a bad parameter fails New, not each call.
func TestNewReadsParamsOnce(t *testing.T) {
	p := verifiers.Params{"tol": 0.1}
	v, err := verifiers.New("number", p)
	require.NoError(t, err)
	p["tol"] = -1.0 // would be an error if Verify read it
	p["bogus"] = true
	res, err := v.Verify(context.Background(), "The answer is 105.", "100")
	require.NoError(t, err, "after the map changed: %+v; want correct within tol 0.1", res)
	assert.True(t, res.Correct, "after the map changed: %+v; want correct within tol 0.1", res)
}

// Registry.Verify builds a verifier once per distinct (name, parameters),
// and its cache stays bounded.
func TestRegistryCachesBuiltVerifiers(t *testing.T) {
	var builds atomic.Int64
	var reg verifiers.Registry
	err := reg.Register("count", func(p verifiers.Params) (verifiers.Verifier, error) {
		builds.Add(1)
		if err := p.Only("k"); err != nil {
			return nil, err
		}
		return verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
			return verifiers.Result{Score: 1, Correct: true}, nil
		}), nil
	})
	require.NoError(t, err)
	ctx := context.Background()
	verify := func(p verifiers.Params) {
		t.Helper()
		_, err := reg.Verify(ctx, "count", "a", "a", p)
		require.NoError(t, err)
	}
	for range 100 {
		verify(nil)
		verify(verifiers.Params{"k": 1.0})
		verify(verifiers.Params{"k": 2.0})
	}
	if n := builds.Load(); n != 3 {
		t.Errorf("%d builds for 300 calls with 3 distinct parameter sets, want 3", n)
	}
	// Parameters that fail are reported on every call, not cached.
	for range 2 {
		_, err := reg.Verify(ctx, "count", "a", "a", verifiers.Params{"x": 1.0})
		assert.ErrorIs(t, err, verifiers.ErrParam, "bad parameters")
	}
	// Many distinct parameter sets: the cache is emptied rather than
	// grown, so the first set is built again. (k 1 and 2 are cached
	// already, so the loop builds 2998.)
	builds.Store(0)
	for i := range 3000 {
		verify(verifiers.Params{"k": float64(i)})
	}
	verify(verifiers.Params{"k": 0.0})
	if n := builds.Load(); n != 2999 {
		t.Errorf("%d builds for 3000 sets (2998 new) and a repeat of the first, want 2999 (a bounded cache)", n)
	}
}

// TestMathArgumentOrder would have caught the math adapter passing
// (reference, response) to mathverify: this response has no answer slot,
// so it earns 0, but read as a reference it yields 4, which the bare "4"
// then matches.
func TestMathArgumentOrder(t *testing.T) {
	const response, reference = "I computed 2+2 and got 4", "4"
	v, err := verifiers.New("math", nil)
	require.NoError(t, err)
	res, err := v.Verify(context.Background(), response, reference)
	require.NoError(t, err, "Verify(response, reference) = %+v; want 0 with a reason", res)
	assert.False(t, res.Correct, "Verify(response, reference) = %+v; want 0 with a reason", res)
	assert.NotEmpty(t, res.Reason, "Verify(response, reference) = %+v; want 0 with a reason", res)
	if swapped, _ := v.Verify(context.Background(), reference, response); !swapped.Correct {
		t.Fatalf("the swapped call scores %+v; this test no longer tells the orders apart", swapped)
	}
	for name, got := range map[string]func() (verifiers.Result, error){
		"Math": func() (verifiers.Result, error) {
			return verifiers.Math(context.Background(), response, reference, nil)
		},
		"Registry.Verify": func() (verifiers.Result, error) {
			return verifiers.Default.Verify(context.Background(), "math", response, reference, nil)
		},
	} {
		r, err := got()
		require.NoError(t, err, "%s", name)
		assert.Equal(t, res, r, "%s", name)
	}
}

// Result.Parsed is the answer as read, not implicit multiplication of
// letters.
func TestMathParsedIsReadable(t *testing.T) {
	for _, c := range []struct{ response, parsed string }{
		{"The answer is I don't know.", "I don't know"},
		{`The answer is $\frac{1}{2}$.`, "1/2"},
		{`\boxed{abc}`, "abc"},
	} {
		res, err := verifiers.Math(context.Background(), c.response, "4", nil)
		require.NoError(t, err, "Math(%q).Parsed", c.response)
		assert.Equal(t, c.parsed, res.Parsed, "Math(%q).Parsed", c.response)
	}
}

func ExampleVerifier_mathReference() {
	v, _ := verifiers.New("math", nil)
	_, err := v.Verify(context.Background(), `\boxed{1/2}`, `\frac{1}{`)
	fmt.Println(errors.Is(err, verifiers.ErrSyntax))
	fmt.Println(err)
	// Output:
	// true
	// verifiers: math: ref: syntax error: 1 unclosed '{'
}

// A cache hit of Registry.Verify allocates nothing: the key is built on
// the stack.
func TestRegistryVerifyCacheHitAllocatesNothing(t *testing.T) {
	var reg verifiers.Registry
	nop := verifiers.Func(func(context.Context, string, string) (verifiers.Result, error) {
		return verifiers.Result{Score: 1, Correct: true}, nil
	})
	if err := reg.Register("nop", verifiers.Adapt(verifiers.ParamFunc(func(ctx context.Context, response, reference string, _ verifiers.Params) (verifiers.Result, error) {
		return nop(ctx, response, reference)
	}))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := verifiers.Params{"tol": 0.01, "extract": "slot", "lenient": true, "keys": []any{"a", 1.0}}
	_, err := reg.Verify(ctx, "nop", "a", "a", p)
	require.NoError(t, err)
	if n := testing.AllocsPerRun(100, func() { _, _ = reg.Verify(ctx, "nop", "a", "a", p) }); n != 0 {
		t.Errorf("Registry.Verify with cached parameters: %v allocations, want 0", n)
	}
}
