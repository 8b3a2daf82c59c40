package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResponseLayout: the well-formed response has at least 64 reasoning
// tokens between <think> and </think>, and scores format 1; with the
// skill's method and its rule it is an exact match with reward 1; with any
// other method it is well formed but not an exact match, its rMAE in [0, 1).
func TestResponseLayout(t *testing.T) {
	require.GreaterOrEqual(t, reasoningLen, 64)
	w := newWorld(2)
	s, err := newScorer(&w)
	require.NoError(t, err)
	for _, p := range newPool(2, &w, 40, 0) {
		right := w.SkillMethod[p.Skill]
		toks := wellFormed(&w, p, right, w.Work(right, p))
		require.Len(t, toks, posEOS+1)
		require.Equal(t, tokThinkEnd, toks[posThinkEnd])
		c := &Completion{Prompt: p, Tokens: toks}
		require.NoError(t, s.Score(c))
		assert.Equal(t, 1.0, c.Format, "%v: %q", p, Render(toks))
		assert.True(t, c.Exact, "%v: %q", p, Render(toks))
		assert.Equal(t, 1.0, c.Reward)
		for m := range numMethods {
			work := w.Work(m, p)
			if m == right || work == w.Work(right, p) {
				continue
			}
			c := &Completion{Prompt: p, Tokens: wellFormed(&w, p, m, work)}
			require.NoError(t, s.Score(c))
			assert.Equal(t, 1.0, c.Format)
			if w.Answer(p) != Render(c.Tokens[posDigits:posDigits+2]) {
				assert.False(t, c.Exact, "method %d: %q", m, Render(c.Tokens))
				assert.True(t, c.Accuracy >= 0 && c.Accuracy < 1, "method %d: rMAE %v", m, c.Accuracy)
			}
		}
		trunc := &Completion{Prompt: p, Tokens: toks[:posWork]}
		require.NoError(t, s.Score(trunc))
		assert.Equal(t, -1.0, trunc.Format, "a truncated response is badly formatted")
	}
}

// TestPool: a seed fixes the pool; prompts are distinct, skills in turn,
// the held-out prompts come last, and no answer is 00 (Eq. 8 needs a
// non-zero reference).
func TestPool(t *testing.T) {
	w := newWorld(5)
	a, b := newPool(5, &w, 300, 50), newPool(5, &w, 300, 50)
	require.Equal(t, a, b, "the same seed drew different pools")
	require.Equal(t, 300, trainCount(a))
	seen := map[[numOperands + 1]int]bool{}
	for i, p := range a {
		key := [numOperands + 1]int{p.Skill, p.Operands[0], p.Operands[1], p.Operands[2], p.Operands[3]}
		require.False(t, seen[key], "%v twice", p)
		seen[key] = true
		assert.Equal(t, i >= 300, p.Held, "%v", p)
		assert.NotEqual(t, "00", w.Answer(p))
		assert.Equal(t, uint64(i+1), p.ID())
	}
}

// TestFeaturesInRange: for any prefix of any tokens, with or without a
// hint, every feature indexes the model's input — the policy may write
// anything, the features stay in bounds.
func TestFeaturesInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := newWorld(1)
	pool := newPool(1, &w, 50, 0)
	var f []int
	for range 2000 {
		p := pool[rng.IntN(len(pool))]
		prefix := make([]int, rng.IntN(maxLen))
		for i := range prefix {
			prefix[i] = rng.IntN(vocab)
		}
		f = features(f, p, rng.IntN(numMethods+1)-1, prefix)
		for _, x := range f {
			require.True(t, x >= 0 && x < numFeatures, "feature %d of prefix %v", x, prefix)
		}
	}
}

// TestFeaturesHideTheRules: the features do not depend on the world — two
// seeds with different rules give the same features for the same prompt
// and prefix — so nothing the policy sees tells it a rule or a skill's
// method (a hint aside).
func TestFeaturesHideTheRules(t *testing.T) {
	w1, w2 := newWorld(1), newWorld(2)
	require.NotEqual(t, w1, w2)
	p := newPool(1, &w1, 4, 0)[2]
	toks := wellFormed(&w1, p, w1.SkillMethod[p.Skill], w1.Work(w1.SkillMethod[p.Skill], p))
	for t0 := range toks {
		a := features(nil, p, -1, toks[:t0])
		b := features(nil, p, -1, toks[:t0])
		require.Equal(t, a, b)
	}
}

// TestSFTMakesTheFormatStable: after stage S0 the policy's sampled
// responses to training prompts are well formed (AVATAR Table 1's cold
// start), and their accuracy is far from perfect, leaving RL work to do.
func TestSFTMakesTheFormatStable(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a policy")
	}
	set := settingsFor(4)
	set.Train, set.Held = 400, 40
	var st seedState
	st.get(set)
	s, err := newScorer(&st.world)
	require.NoError(t, err)
	a := newAgent(st.base.Clone(), set.LR, 4)
	formatted, exact := 0, 0
	const n = 200
	for i := range n {
		c := a.Generate(st.pool[i], -1, false)
		require.NoError(t, s.Score(c))
		if c.Format == 1 {
			formatted++
		}
		if c.Exact {
			exact++
		}
	}
	assert.GreaterOrEqual(t, formatted, 190, "well-formed responses after S0, of %d", n)
	assert.Less(t, exact, n/2, "exact matches after S0, of %d", n)
}
