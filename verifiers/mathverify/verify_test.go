package mathverify

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlpost/rlpost/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		check   func(Options) bool
		errKey  string // "" when no error is expected
		inRange bool   // the error is also tensor.ErrRange: a value out of its domain
	}{
		{"empty", `{}`, func(o Options) bool { return o == DefaultOptions() }, "", false},
		{"nil map", `null`, func(o Options) bool { return o == DefaultOptions() }, "", false},
		{"precision", `{"precision": 2}`, func(o Options) bool { return o.Precision == 2 }, "", false},
		{"strict", `{"strict": false}`, func(o Options) bool { return !o.Strict }, "", false},
		{"set relation", `{"allow_set_relation_comp": true}`, func(o Options) bool { return o.AllowSetRelationComp }, "", false},
		{"match latex", `{"match_types": ["latex"]}`, func(o Options) bool { return o.Match == MatchLatex }, "", false},
		{"match all", `{"match_types": ["latex", "expr", "choice"]}`, func(o Options) bool { return o.Match == MatchLatex|MatchExpr|MatchChoice }, "", false},
		{"boxed off", `{"boxed_priority": -1}`, func(o Options) bool { return o.BoxedPriority == -1 }, "", false},
		{"choices", `{"match_types": ["choice"], "choices": "ABCD"}`, func(o Options) bool { return o.Choices == "ABCD" }, "", false},
		{"limits", `{"max_input_len": 100, "max_depth": 10, "max_exponent": 50, "max_factorial": 20}`,
			func(o Options) bool {
				return o.MaxInputLen == 100 && o.MaxDepth == 10 && o.MaxExponent == 50 && o.MaxFactorial == 20
			}, "", false},
		{"timeout", `{"timeout_ms": 2.5}`, func(o Options) bool { return o.Timeout == 2500*time.Microsecond }, "", false},
		{"unknown key", `{"precison": 2}`, nil, `params["precison"]`, false},
		{"fraction", `{"precision": 2.5}`, nil, `params["precision"]`, true},
		{"string number", `{"precision": "2"}`, nil, `params["precision"]`, false},
		{"negative precision", `{"precision": -1}`, nil, `params["precision"]`, true},
		{"huge precision", `{"precision": 40}`, nil, `params["precision"]`, true},
		{"bool as string", `{"strict": "false"}`, nil, `params["strict"]`, false},
		{"bad match", `{"match_types": ["latex", "sympy"]}`, nil, `params["match_types"]`, false},
		{"empty match", `{"match_types": []}`, nil, `params["match_types"]`, false},
		{"match not list", `{"match_types": 3}`, nil, `params["match_types"]`, false},
		{"bad choices", `{"match_types": ["choice"], "choices": "AA"}`, nil, `params["choices"]`, true},
		{"boxed too low", `{"boxed_priority": -2}`, nil, `params["boxed_priority"]`, true},
		{"depth too small", `{"max_depth": 1}`, nil, `params["max_depth"]`, true},
		{"negative timeout", `{"timeout_ms": -1}`, nil, `params["timeout_ms"]`, true},
		{"zero input", `{"max_input_len": 0}`, nil, `params["max_input_len"]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var params map[string]any
			require.NoError(t, json.Unmarshal([]byte(tt.params), &params))
			o, err := ParseOptions(params)
			if tt.errKey != "" {
				require.Error(t, err, "ParseOptions(%s): want an error naming", tt.params)
				require.Contains(t, err.Error(), tt.errKey, "ParseOptions(%s): want an error naming", tt.params)
				var ae *tensor.ArgError
				require.ErrorAs(t, err, &ae, "error is not a *tensor.ArgError for")
				assert.Equal(t, tt.errKey, ae.Arg, "error is not a *tensor.ArgError for")
				assert.ErrorIs(t, err, ErrParam, "error %v does not wrap ErrParam", err)
				// The text and the kind agree: "out of range" exactly when
				// errors.Is finds tensor.ErrRange.
				if got := errors.Is(err, tensor.ErrRange); got != tt.inRange || strings.Contains(err.Error(), "out of range") != got {
					t.Errorf("error %v: errors.Is(tensor.ErrRange) = %v, want %v, and the text to agree", err, got, tt.inRange)
				}
				return
			}
			require.NoError(t, err, "ParseOptions(%s)", tt.params)
			assert.True(t, tt.check(o), "ParseOptions(%s) = %+v", tt.params, o)
		})
	}
}

func TestVerifyErrors(t *testing.T) {
	ctx := context.Background()
	small := DefaultOptions()
	small.MaxInputLen = 10
	bad := DefaultOptions()
	bad.Precision = 99
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		gold, pred string
		opts       Options
		want       error
		mention    string
	}{
		{"invalid options", ctx, "1", "1", bad, tensor.ErrRange, "Options.Precision"},
		{"zero options", ctx, "1", "1", Options{}, tensor.ErrRange, "Options."},
		{"long gold", ctx, "12345678901", "1", small, tensor.ErrRange, "reference"},
		{"long pred", ctx, "1", "12345678901", small, tensor.ErrRange, "response"},
		{"empty gold", ctx, "  \n", "1", DefaultOptions(), tensor.ErrEmpty, "reference"},
		{"open brace", ctx, `\frac{`, "1", DefaultOptions(), ErrSyntax, "reference"},
		{"stray braces", ctx, "}}}", "1", DefaultOptions(), ErrSyntax, "reference"},
		{"bad latex", ctx, `\frac12^`, "1", DefaultOptions(), ErrSyntax, "reference"},
		{"cancelled", cancelled, "1", "1", DefaultOptions(), context.Canceled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Verify(tt.ctx, tt.gold, tt.pred, tt.opts)
			require.ErrorIs(t, err, tt.want, "Verify mentioning")
			require.Contains(t, err.Error(), tt.mention, "Verify mentioning")
			assert.False(t, res.Correct, "result %+v with an error", res)
			assert.Equal(t, float64(0), res.Score, "result %+v with an error", res)
		})
	}
}

func TestVerifyNilContext(t *testing.T) {
	//lint:ignore SA1012 a nil context must not crash Verify
	res, err := Verify(nil, "2", "2", DefaultOptions()) //nolint:staticcheck
	require.NoError(t, err, "Verify(nil ctx) = %+v", res)
	require.True(t, res.Correct, "Verify(nil ctx) = %+v", res)
}

// TestPanicBecomesError checks the last line of defence: a panic inside
// Verify is returned as ErrInternal, with a stack for the bug report.
func TestPanicBecomesError(t *testing.T) {
	testHookPanic = func() { panic("boom") }
	defer func() { testHookPanic = nil }()
	res, err := Verify(context.Background(), "1", "1", DefaultOptions())
	require.ErrorIs(t, err, ErrInternal, "Verify with a panicking hook")
	require.Contains(t, err.Error(), "boom", "Verify with a panicking hook")
	require.Contains(t, err.Error(), "goroutine", "Verify with a panicking hook")
	assert.Equal(t, (Result{}), res, "result after a panic")
}

func TestResultRendering(t *testing.T) {
	tests := []struct{ gold, pred, g, p string }{
		{`$\frac{1}{2}$`, `The answer is $\boxed{0.5}$.`, "1/2", "0.5"},
		{`$[0, 1)$`, `$x \in [0,1)$`, "[0, 1)", "x in [0, 1)"},
		{`\text{Evelyn}`, `no idea`, `"Evelyn"`, "no idea"},
		{`4`, `The answer is I don't know.`, "4", "I don't know"},
		{`$\text{red}$`, `the answer is red`, `"red"`, "red"},
		{`$\begin{pmatrix}1&2\\3&4\end{pmatrix}$`, `$x=2$`, "Matrix([[1, 2], [3, 4]])", "x = 2"},
		{`$12:00$`, `I do not know at all, sorry, this is a very long answer without any value in it. It goes on and on and on, and does not stop for a long while, then it stops, having said nothing of use whatsoever, at length.`, "12:0", ""},
	}
	long := "é" + strings.Repeat("why? ", 300)
	tests = append(tests, struct{ gold, pred, g, p string }{long, "1", long[:1000] + "…", "1"})
	for _, tt := range tests {
		res, err := Verify(context.Background(), tt.gold, tt.pred, DefaultOptions())
		require.NoError(t, err)
		assert.Equal(t, tt.g, res.Gold, "Verify(%q, %q) renders", tt.gold, tt.pred)
		assert.Equal(t, tt.p, res.Pred, "Verify(%q, %q) renders", tt.gold, tt.pred)
	}
}

// TestHostile feeds inputs built to exhaust time or memory; each must come
// back quickly with a verdict or an error, never a panic.
func TestHostile(t *testing.T) {
	rep := strings.Repeat
	tests := []struct {
		name, gold, pred string
		maxErr           bool // an error (time budget, limits) is acceptable
	}{
		{"deep parens", "1", rep("(", 5000) + "1" + rep(")", 5000), false},
		{"deep braces", "1", `\boxed{` + rep("{", 5000) + "1" + rep("}", 5000) + "}", false},
		{"deep fractions", "1", rep(`\frac{1}{`, 2000) + "1" + rep("}", 2000), false},
		{"deep powers", "2", rep("2^{", 3000) + "2" + rep("}", 3000), false},
		{"tower", "1", `$10^{10^{10^{10}}}$`, false},
		{"big exponent", "1", `$2^{99999999}$`, false},
		{"huge factorial", "1", `$100000000!$`, false},
		{"factorial tower", "1", `$((10!)!)!$`, false},
		{"huge binomial", "1", `$\binom{100000000}{50000000}$`, false},
		{"long literal", "1", "$" + rep("9", 100000) + "$", false},
		{"huge sci exponent", "1", "1e999999999", false},
		{"unclosed boxes", "1", rep(`\boxed{`, 20000), false},
		{"unclosed dollars", "1", rep("$ x ", 20000), false},
		{"unclosed parens", "1", rep(`\( x `, 20000), false},
		{"many dollars", "1", rep("$1$", 30000), false},
		{"many answers", "1", rep("the answer is ", 20000), false},
		{"many boxes", "1", rep(`\boxed{1} and `, 20000), false},
		{"long run", "1", rep("1+", 100000) + "1", false},
		{"open parens text", "1", rep("(", 200000), false},
		{"spaces", "1", rep(" ", 500000) + "1", false},
		{"nested sums", "1", `$\sum_{i=1}^{9999}\sum_{j=1}^{9999}\sum_{k=1}^{9999} ijk$`, true},
		{"big set", rep("1, ", 2000) + "1", rep("2, ", 2000) + "2", true},
		{"matrix chain", "1", "$" + rep(`\begin{pmatrix}1&1\\1&1\end{pmatrix}`, 200) + "$", true},
		{"pm explosion", "1", "$" + rep(`1 \pm `, 200) + "1$", false},
		{"binary junk", "\x00\xff\xfe", "\xff\xfe\x00\x01", false},
		{"invalid utf8", "\xc3", "\xc3\x28 \xe2\x82", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Verify(context.Background(), tt.gold, tt.pred, DefaultOptions())
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("took %v", el)
			}
			if errors.Is(err, ErrInternal) {
				t.Fatalf("panic: %v", err)
			}
			if err != nil && !tt.maxErr {
				t.Errorf("error %v", err)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	o := DefaultOptions()
	o.Timeout = time.Nanosecond // expired at the first look at the clock
	start := time.Now()
	res, err := Verify(context.Background(), "1", `$\sum_{i=1}^{9999}\sum_{j=1}^{9999} ij$`, o)
	require.NoError(t, err, "Verify with a 1 ms budget on 10⁸ terms = %+v; want a timeout verdict of 0 with a reason", res)
	require.True(t, res.Timeout, "Verify with a 1 ms budget on 10⁸ terms = %+v; want a timeout verdict of 0 with a reason", res)
	require.Equal(t, float64(0), res.Score, "Verify with a 1 ms budget on 10⁸ terms = %+v; want a timeout verdict of 0 with a reason", res)
	require.NotEmpty(t, res.Reason, "Verify with a 1 ms budget on 10⁸ terms = %+v; want a timeout verdict of 0 with a reason", res)
	if el := time.Since(start); el > time.Second {
		t.Errorf("a 1 ms budget took %v", el)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	o.Timeout = 0
	res, err = Verify(ctx, "1", `$\sum_{i=1}^{9999}\sum_{j=1}^{9999} ij$`, o)
	require.NoError(t, err, "Verify with a 1 ms context = %+v; want a timeout verdict", res)
	require.True(t, res.Timeout, "Verify with a 1 ms context = %+v; want a timeout verdict", res)
	require.Equal(t, float64(0), res.Score, "Verify with a 1 ms context = %+v; want a timeout verdict", res)
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = Verify(cctx, "1", "1", o)
	require.ErrorIs(t, err, context.Canceled, "Verify with a cancelled context = %v, want context.Canceled", err)
}

// TestLimits checks that the configured limits change what is computed
// exactly.
func TestLimits(t *testing.T) {
	o := DefaultOptions()
	o.MaxFactorial = 10
	if r, _ := Verify(context.Background(), "3628800", "10!", o); !r.Correct {
		t.Error("10! with MaxFactorial 10 should be computed")
	}
	if r, _ := Verify(context.Background(), "39916800", "11!", o); !r.Correct {
		// beyond the exact limit the float path still agrees
		t.Error("11! should still match numerically")
	}
	o.MaxFactorial = 5
	if r, _ := Verify(context.Background(), "1", "1000!/1000!", o); r.Correct {
		t.Error("1000!/1000! beyond MaxFactorial should not evaluate")
	}
	o = DefaultOptions()
	o.MaxExponent = 10
	if r, _ := Verify(context.Background(), "1024", "2^{10}", o); !r.Correct {
		t.Error("2^10 with MaxExponent 10")
	}
	// Beyond the exact limit powers are compared in floating point, which
	// still tells 2^100 from 2^101 but not from 2^100 + 1.
	if r, _ := Verify(context.Background(), "2^{101}", "2^{100}", o); r.Correct {
		t.Error("2^101 and 2^100 differ")
	}
	if r, _ := Verify(context.Background(), "2^{100}", "2^{100}", o); !r.Correct {
		t.Error("2^100 beyond the exact limit should still match itself")
	}
	o = DefaultOptions()
	o.MaxDepth = 8
	if r, _ := Verify(context.Background(), "1", "((((((((((1))))))))))", o); r.Correct {
		t.Error("nesting beyond MaxDepth should not parse")
	}
}

// TestConcurrent runs Verify from several goroutines; with -race it checks
// that calls share no mutable state.
func TestConcurrent(t *testing.T) {
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func(g int) {
			ok := true
			for i := 0; i < 50; i++ {
				for _, c := range typical {
					res, err := Verify(context.Background(), c.gold, c.pred, DefaultOptions())
					ok = ok && err == nil && res.Correct
				}
			}
			done <- ok
		}(g)
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("a concurrent Verify failed")
		}
	}
}

// TestArgumentOrder would have caught a swap of response and reference:
// the response below has no answer slot, so it earns 0 with a reason, while
// read as a (liberally parsed) reference it yields 4 and the bare "4" then
// matches it.
func TestArgumentOrder(t *testing.T) {
	v, err := New(DefaultOptions())
	require.NoError(t, err)
	const response, reference = "I computed 2+2 and got 4", "4"
	res, err := v.Verify(context.Background(), response, reference)
	require.NoError(t, err)
	assert.False(t, res.Correct, "Verify(response, reference) = %+v, want 0 with a reason (no answer slot), Gold 4", res)
	assert.NotEmpty(t, res.Reason, "Verify(response, reference) = %+v, want 0 with a reason (no answer slot), Gold 4", res)
	assert.Equal(t, "4", res.Gold, "Verify(response, reference) = %+v, want 0 with a reason (no answer slot), Gold 4", res)
	swapped, err := v.Verify(context.Background(), reference, response)
	require.NoError(t, err)
	require.True(t, swapped.Correct, "the swapped call scores %+v; this test no longer tells the orders apart", swapped)
	// The deprecated package function keeps its (gold, pred) order.
	old, err := Verify(context.Background(), reference, response, DefaultOptions())
	require.NoError(t, err, "Verify(gold, pred)")
	assert.Equal(t, res, old, "Verify(gold, pred)")
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	o := DefaultOptions()
	o.MaxDepth = 0
	_, err := New(o)
	var ae *tensor.ArgError
	require.ErrorAs(t, err, &ae, "New(MaxDepth 0): want a *tensor.ArgError for Options.MaxDepth wrapping tensor.ErrRange")
	require.ErrorIs(t, err, tensor.ErrRange, "New(MaxDepth 0): want a *tensor.ArgError for Options.MaxDepth wrapping tensor.ErrRange")
	require.Equal(t, "Options.MaxDepth", ae.Arg, "New(MaxDepth 0): want a *tensor.ArgError for Options.MaxDepth wrapping tensor.ErrRange")
}
