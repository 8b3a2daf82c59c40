package mathverify_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/internal/testkit/apitest"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/mathverify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailureModes walks every exported function of mathverify that
// returns an error with bad input and checks errors.Is for the documented
// kind, errors.As to *tensor.ArgError naming the argument, the prefix
// "mathverify: ", and that the text says "out of range" exactly when
// errors.Is finds tensor.ErrRange.
func TestFailureModes(t *testing.T) {
	ctx := context.Background()
	v, err := mathverify.New(mathverify.DefaultOptions())
	require.NoError(t, err)
	small := mathverify.DefaultOptions()
	small.MaxInputLen = 4
	vs, err := mathverify.New(small)
	require.NoError(t, err)
	type failure struct {
		call  func() error
		kinds []error
		arg   string
	}
	cases := map[string][]failure{
		"New": {
			{func() error { _, err := mathverify.New(mathverify.Options{}); return err }, []error{tensor.ErrRange}, "Options.Match"},
		},
		"Options.Validate": {
			{func() error {
				o := mathverify.DefaultOptions()
				o.Choices = "AA"
				o.Match |= mathverify.MatchChoice
				return o.Validate()
			}, []error{tensor.ErrRange}, "Options.Choices"},
		},
		"ParseOptions": {
			{func() error { _, err := mathverify.ParseOptions(map[string]any{"precison": 2.0}); return err }, []error{mathverify.ErrParam}, `params["precison"]`},
			{func() error { _, err := mathverify.ParseOptions(map[string]any{"max_depth": 2.0}); return err }, []error{mathverify.ErrParam, tensor.ErrRange}, `params["max_depth"]`},
		},
		"Verifier.Verify": {
			{func() error { _, err := v.Verify(ctx, "1", `\frac{`); return err }, []error{mathverify.ErrSyntax}, "reference"},
			{func() error { _, err := v.Verify(ctx, "1", " "); return err }, []error{tensor.ErrEmpty}, "reference"},
			{func() error { _, err := vs.Verify(ctx, "123456", "1"); return err }, []error{tensor.ErrRange}, "response"},
		},
		"Verify": {
			{func() error { _, err := mathverify.Verify(ctx, "}}}", "1", mathverify.DefaultOptions()); return err }, []error{mathverify.ErrSyntax}, "reference"},
		},
	}
	for name, fs := range cases {
		for i, f := range fs {
			err := f.call()
			if err == nil {
				t.Errorf("%s #%d: no error", name, i)
				continue
			}
			for _, k := range f.kinds {
				require.ErrorIs(t, err, k, "%s #%d does not wrap (and say)", name, i)
				assert.Contains(t, err.Error(), k.Error(), "%s #%d does not wrap (and say)", name, i)
			}
			if strings.Contains(err.Error(), "out of range") != errors.Is(err, tensor.ErrRange) {
				t.Errorf("%s #%d: %q: the text and errors.Is(tensor.ErrRange) disagree", name, i, err)
			}
			var ae *tensor.ArgError
			require.ErrorAs(t, err, &ae, "%s #%d is not a *tensor.ArgError for", name, i)
			assert.Equal(t, f.arg, ae.Arg, "%s #%d is not a *tensor.ArgError for", name, i)
			if !strings.HasPrefix(err.Error(), "mathverify: ") {
				t.Errorf("%s #%d: %q does not start with \"mathverify: \"", name, i, err)
			}
		}
	}
	names, err := apitest.ErrorFuncs(".")
	require.NoError(t, err)
	for _, n := range names {
		if _, ok := cases[n]; !ok {
			t.Errorf("%s returns an error but has no failure case", n)
		}
	}
	for n := range cases {
		assert.True(t, slices.Contains(names, n), "failure case for %s, which is not an exported function returning an error", n)
	}
}
