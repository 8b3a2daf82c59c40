package mathverify_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/mathverify"
)

func ExampleVerifier_Verify() {
	v, err := mathverify.New(mathverify.DefaultOptions())
	if err != nil {
		panic(err)
	}
	response := `The sum telescopes, so the probability is $\boxed{\dfrac{2}{6}}$.`
	res, err := v.Verify(context.Background(), response, `$\frac{1}{3}$`)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Correct, res.Score, res.Gold, res.Pred)
	// Output: true 1 1/3 2/6
}

func ExampleVerifier_Verify_forms() {
	v, err := mathverify.New(mathverify.DefaultOptions())
	if err != nil {
		panic(err)
	}
	for _, c := range []struct{ gold, pred string }{
		{`x = 3`, `3`},                        // an assignment answers with its value
		{`y = 2x+1`, `2x + 1 = y`},            // same equation
		{`x > 3`, `(3, \infty)`},              // a relation and its interval
		{`(1, 2]`, `(1, 2)`},                  // open vs closed
		{`\{1, 2, 3\}`, `3, 2, 1`},            // sets ignore order
		{`(1, 2)`, `(2, 1)`},                  // tuples do not
		{`50\%`, `0.5`},                       // percentages
		{`\sqrt{8}`, `2\sqrt{2}`},             // exact irrational values
		{`\sin^2 x + \cos^2 x`, `1`},          // identities, at random points
		{`1 \pm \sqrt{2}`, `1+\sqrt{2}`},      // a set missing an element
		{`\frac{1}{3}`, `The answer is 0.33`}, // not to 6 decimal places
	} {
		res, _ := v.Verify(context.Background(), c.pred, c.gold)
		fmt.Printf("%-22s %-22s %v\n", c.gold, c.pred, res.Correct)
	}
	// Output:
	// x = 3                  3                      true
	// y = 2x+1               2x + 1 = y             true
	// x > 3                  (3, \infty)            true
	// (1, 2]                 (1, 2)                 false
	// \{1, 2, 3\}            3, 2, 1                true
	// (1, 2)                 (2, 1)                 false
	// 50\%                   0.5                    true
	// \sqrt{8}               2\sqrt{2}              true
	// \sin^2 x + \cos^2 x    1                      true
	// 1 \pm \sqrt{2}         1+\sqrt{2}             false
	// \frac{1}{3}            The answer is 0.33     false
}

func ExampleParseOptions() {
	// The params object of an `rlpost verify` line, as encoding/json decodes it.
	params := map[string]any{"precision": 2.0, "match_types": []any{"latex"}}
	opts, err := mathverify.ParseOptions(params)
	if err != nil {
		panic(err)
	}
	v, err := mathverify.New(opts)
	if err != nil {
		panic(err)
	}
	res, _ := v.Verify(context.Background(), `so $x \approx 0.33$`, `$\frac{1}{3}$`)
	fmt.Println(opts.Precision, res.Correct)

	_, err = mathverify.ParseOptions(map[string]any{"precison": 2.0})
	fmt.Println(errors.Is(err, mathverify.ErrParam))
	_, err = mathverify.ParseOptions(map[string]any{"precision": 40.0})
	fmt.Println(errors.Is(err, mathverify.ErrParam), errors.Is(err, tensor.ErrRange))
	fmt.Println(err)
	// Output:
	// 2 true
	// true
	// true true
	// mathverify: params["precision"]: bad parameter: out of range: 40, want 0…15
}

func ExampleOptions_strict() {
	opts := mathverify.DefaultOptions()
	strictV, _ := mathverify.New(opts)
	strict, _ := strictV.Verify(context.Background(), `$f(y)$`, `$f(x)$`)
	opts.Strict = false
	looseV, _ := mathverify.New(opts)
	loose, _ := looseV.Verify(context.Background(), `$f(y)$`, `$f(x)$`)
	fmt.Println(strict.Correct, loose.Correct)
	// Output: false true
}
