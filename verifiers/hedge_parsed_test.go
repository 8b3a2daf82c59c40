package verifiers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHedgeShowsNoParsedAnswer: any hedge of two different boxed numbers
// scores 0 with a "several different" reason and shows no one candidate
// as Parsed, whichever verifier reads it.
func TestHedgeShowsNoParsedAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	// (", " or " or " alone between boxes reads as one set answer, {a, b},
	// under math's rules: a different category, scored 0 as a wrong set.)
	joins := []string{" or maybe ", " but possibly ", "\n\nActually ", ". Or perhaps "}
	for range 200 {
		a, b := rng.IntN(1000), rng.IntN(1000)
		if a == b {
			continue
		}
		pred := fmt.Sprintf(`\boxed{%d}%s\boxed{%d}`, a, joins[rng.IntN(len(joins))], b)
		for _, name := range []string{"math", "number"} {
			res, err := verifiers.Default.Verify(context.Background(), name, pred, fmt.Sprint(b), nil)
			require.NoError(t, err)
			assert.Zero(t, res.Score, "%s %q: %+v", name, pred, res)
			assert.True(t, strings.HasPrefix(res.Reason, "several different"), "%s %q: %+v", name, pred, res)
			assert.Empty(t, res.Parsed, "%s %q: %+v", name, pred, res)
		}
	}
}
