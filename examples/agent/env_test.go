package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/rewards"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testMap is
//
//	S _ _ _
//	_ O _ _
//	_ _ _ O
//	O _ _ G
//
// with the start at 0 and the goal at 15.
func testMap() *board {
	const layout = "S___" + "_O__" + "___O" + "O__G"
	m := &board{Size: 4, Cells: make([]cell, 16)}
	for i, c := range layout {
		switch c {
		case 'S':
			m.Start = i
		case 'O':
			m.Cells[i] = cellHole
		case 'G':
			m.Cells[i] = cellGoal
		}
	}
	return m
}

func TestStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		from   int
		action action
		valid  bool
		to     int
		reward float64
		done   bool
	}{
		{"up", 6, actUp, true, 2, stepPenalty, false},
		{"down", 6, actDown, true, 10, stepPenalty, false},
		{"left", 6, actLeft, true, 5, stepPenalty, true}, // 5 is a hole
		{"right", 6, actRight, true, 7, stepPenalty, false},
		{"wall above", 2, actUp, true, 2, stepPenalty, false},
		{"wall left", 8, actLeft, true, 8, stepPenalty, false},
		{"wall right", 7, actRight, true, 7, stepPenalty, false},
		{"wall below", 13, actDown, true, 13, stepPenalty, false},
		{"into a hole", 10, actRight, true, 11, stepPenalty, true},
		{"onto the goal", 14, actRight, true, 15, goalReward, true},
		{"no valid action stays", 14, actRight, false, 14, stepPenalty, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e episode
			e.Reset(testMap())
			e.Pos = tc.from
			r, err := e.Step(tc.action, tc.valid)
			require.NoError(t, err)
			assert.Equal(t, tc.to, e.Pos, "at, reward, done")
			assert.Equal(t, tc.reward, r, "at, reward, done")
			assert.Equal(t, tc.done, e.Done, "at, reward, done")
			if tc.done && e.Won != (tc.reward == goalReward) {
				t.Errorf("won %v at %d", e.Won, e.Pos)
			}
		})
	}
}

func TestStepAfterEndFails(t *testing.T) {
	var e episode
	e.Reset(testMap())
	e.Pos = 14
	_, err := e.Step(actRight, true)
	require.NoError(t, err, "won, err")
	require.True(t, e.Won, "won, err")
	_, err = e.Step(actLeft, true)
	assert.Error(t, err, "step after the goal: no error")
	e.Reset(testMap())
	_, err = e.Step(action(7), true)
	assert.Error(t, err, "action 7: no error")
}

func TestShortestPath(t *testing.T) {
	m := testMap()
	if d := m.ShortestPath(); d != 6 {
		t.Errorf("shortest path %d, want 6", d)
	}
	m.Cells[14] = cellHole
	if d := m.ShortestPath(); d != -1 {
		t.Errorf("goal walled in by holes: shortest path %d, want -1", d)
	}
}

func TestRandomMaps(t *testing.T) {
	cfg := mapConfig{Size: 4, HoleProb: 0.3, MinPath: 3}
	rng := rand.New(rand.NewPCG(1, 2))
	train := randomMaps(rng, 50, cfg, nil)
	eval := randomMaps(rng, 50, cfg, train)
	seen := map[string]bool{}
	for i, m := range append(train, eval...) {
		goals := 0
		for _, c := range m.Cells {
			if c == cellGoal {
				goals++
			}
		}
		assert.Equal(t, 1, goals, "map %d goals, start on", i)
		assert.Equal(t, cellFrozen, m.Cells[m.Start], "map %d goals, start on", i)
		if d := m.ShortestPath(); d < cfg.MinPath {
			t.Errorf("map %d: shortest path %d, want ≥ %d", i, d, cfg.MinPath)
		}
		if seen[m.key()] {
			t.Errorf("map %d repeats an earlier map", i)
		}
		seen[m.key()] = true
	}
}

func TestObservationTokens(t *testing.T) {
	var e episode
	e.Reset(testMap())
	if got, want := render(observationTokens(nil, &e)), "P _ _ _ _ O _ _ _ _ _ O O _ _ G"; got != want {
		t.Errorf("start: %q, want %q", got, want)
	}
	e.Pos = 11
	e.Step(actDown, true)
	if got := render(observationTokens(nil, &e)); !strings.HasSuffix(got, "O _ _ *") {
		t.Errorf("on the goal: %q", got)
	}
	e.Reset(testMap())
	e.Step(actDown, true)
	e.Step(actRight, true)
	if got := render(observationTokens(nil, &e)); got != "_ _ _ _ _ X _ _ _ _ _ O O _ _ G" {
		t.Errorf("in the hole: %q", got)
	}
}

// tokens turns a space-separated response into token ids.
func tokens(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, w := range strings.Fields(s) {
		id := -1
		for i, v := range vocab {
			if v == w {
				id = i
			}
		}
		require.GreaterOrEqual(t, id, 0, "no token %q", w)
		out = append(out, id)
	}
	return out
}

func TestParseAndTurnReward(t *testing.T) {
	cfg := rewards.VAGENTurnConfig()
	for _, tc := range []struct {
		name      string
		pos       int
		response  string
		formatOK  bool
		action    action
		grounding float64
		reward    float64 // r = 0.5·I_g + 0.5·format + R(s, a)
	}{
		{"well formed, right direction", 0, "<think> goal-down </think> <answer> Down </answer>", true, actDown, 1, 0.5 + 0.5 - 0.1},
		{"goal below and to the right: goal-right counts", 0, "<think> goal-right </think> <answer> Right </answer>", true, actRight, 1, 0.5 + 0.5 - 0.1},
		{"wrong direction", 0, "<think> goal-up </think> <answer> Down </answer>", true, actDown, 0, 0.5 - 0.1},
		{"reaches the goal", 14, "<think> goal-right </think> <answer> Right </answer>", true, actRight, 1, 0.5 + 0.5 + 10},
		{"goal in the same column: goal-left is wrong", 11, "<think> goal-left </think> <answer> Down </answer>", true, actDown, 0, 0.5 + 10},
		{"answer is not an action", 0, "<think> goal-down </think> <answer> goal-down </answer>", false, 0, 1, 0.5 - 0.1},
		{"two actions", 0, "<think> goal-down </think> <answer> Down Down </answer>", false, 0, 1, 0.5 - 0.1},
		{"no think", 0, "<answer> Down </answer>", false, 0, 0, -0.1},
		{"truncated", 0, "<think> goal-down </think> <answer> Down", false, 0, 1, 0.5 - 0.1},
		// The grounding score reads the last <think>…</think> whatever the format.
		{"tags twice", 0, "<think> <think> goal-down </think> <answer> Down </answer>", false, 0, 1, 0.5 - 0.1},
		{"two words in think", 0, "<think> goal-down goal-right </think> <answer> Down </answer>", true, actDown, 0, 0.5 - 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e episode
			e.Reset(testMap())
			e.Pos = tc.pos
			p := parseResponse(tokens(t, tc.response), &e)
			if p.FormatOK != tc.formatOK || (p.FormatOK && p.Move != tc.action) || p.Grounding != tc.grounding {
				t.Fatalf("parsed %+v, want format %v, action %v, grounding %v", p, tc.formatOK, tc.action, tc.grounding)
			}
			envR, err := e.Step(p.Move, p.FormatOK)
			require.NoError(t, err)
			r := make([]float64, 1)
			require.NoError(t, rewards.TurnRewards(r, []rewards.Turn{p.Turn(envR)}, cfg))
			if d := r[0] - tc.reward; d > 1e-12 || d < -1e-12 {
				t.Errorf("turn reward %v, want %v", r[0], tc.reward)
			}
		})
	}
}

func TestFeatures(t *testing.T) {
	f := newFeatures(4, 8, 8)
	var e episode
	for _, m := range randomMaps(rand.New(rand.NewPCG(3, 4)), 20, mapConfig{Size: 4, HoleProb: 0.2, MinPath: 2}, nil) {
		e.Reset(m)
		for _, prev := range []int{-1, tokThink, vocabSize - 1} {
			got := f.Append(nil, &e, prev, 7, 7)
			require.Len(t, got, numFeats, "%d features", len(got))
			for i, x := range got {
				if x < 0 || x >= f.Count() || (i > 0 && x <= got[i-1]) {
					t.Fatalf("features %v: out of [0, %d) or not in increasing group order", got, f.Count())
				}
			}
		}
	}
}

// FuzzParseResponse: any token sequence parses without panicking, and a
// response judged well formed has the shape <think> … </think> <answer>
// action </answer> with each tag once.
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte{tokThink, tokGoalDown, tokThinkEnd, tokAnswer, tokDown, tokAnswerEnd}, uint8(0))
	f.Add([]byte{tokThink, tokThinkEnd, tokAnswer, tokLeft, tokAnswerEnd}, uint8(6))
	f.Add([]byte{tokAnswer, tokUp, tokAnswerEnd, tokThink}, uint8(15))
	f.Fuzz(func(t *testing.T, raw []byte, pos uint8) {
		if len(raw) > 64 {
			raw = raw[:64]
		}
		toks := make([]int, len(raw))
		for i, b := range raw {
			toks[i] = int(b) % vocabSize
		}
		var e episode
		e.Reset(testMap())
		e.Pos = int(pos) % 16
		p := parseResponse(toks, &e)
		if p.Grounding != 0 && p.Grounding != 1 {
			t.Fatalf("grounding %v", p.Grounding)
		}
		if !p.FormatOK {
			return
		}
		n := len(toks)
		if n < 5 || toks[0] != tokThink || toks[n-1] != tokAnswerEnd || toks[n-2] != tokUp+int(p.Move) ||
			toks[n-3] != tokAnswer || toks[n-4] != tokThinkEnd {
			t.Fatalf("%q judged well formed", render(toks))
		}
		for _, tok := range toks[1 : n-4] {
			if tok <= tokAnswerEnd {
				t.Fatalf("%q judged well formed with a tag inside <think>", render(toks))
			}
		}
	})
}
