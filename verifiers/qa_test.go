package verifiers_test

import (
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
)

func TestNormalizeQA(t *testing.T) {
	for in, want := range map[string]string{
		"The  Eiffel Tower!": "eiffel tower",
		"an apple, a pear":   "apple pear",
		"U.S.A.":             "usa",
		"Theater":            "theater",
		"":                   "",
		"«Paris»":            "paris",
	} {
		assert.Equal(t, want, verifiers.NormalizeQA(in), "NormalizeQA(%q)", in)
	}
}

func TestQAF1(t *testing.T) {
	assert.InDelta(t, 1.0, verifiers.QAF1("the Eiffel Tower", "Eiffel tower"), 1e-12)
	// P = 2/3, R = 2/2: F1 = 0.8.
	assert.InDelta(t, 0.8, verifiers.QAF1("Eiffel Tower Paris", "Eiffel Tower"), 1e-12)
	assert.InDelta(t, 0.0, verifiers.QAF1("London", "Paris"), 1e-12)
	// Repeated tokens count with multiplicity: P = 1/3, R = 1/1.
	assert.InDelta(t, 0.5, verifiers.QAF1("paris paris paris", "paris"), 1e-12)
	assert.InDelta(t, 1.0, verifiers.QAF1("the", "a"), 1e-12) // both empty after normalisation
}

func TestQAVerifier(t *testing.T) {
	for _, c := range []struct {
		pred, ref string
		params    verifiers.Params
		want      float64
	}{
		{"<answer>Barack Obama</answer>", `["Obama", "Barack Obama"]`, nil, 1},
		{"<answer>obama.</answer>", `["Obama", "Barack Obama"]`, nil, 1},
		{"<answer>Michelle Obama</answer>", `["Obama", "Barack Obama"]`, nil, 0},
		{"<answer>Michelle Obama</answer>", `["Obama", "Barack Obama"]`, verifiers.Params{"metric": "f1"}, 2.0 / 3},
		{"<think>Obama</think>", "Obama", nil, 0},
		{"<answer>Obama or Bush</answer>", "Obama", nil, 0},
		{"<answer>Obama</answer> Wait, that's wrong.", "Obama", nil, 0},
		{"The answer is \"Obama\".", "Obama", nil, 1},
		{"<answer>Ｏｂａｍａ</answer>", "Obama", nil, 1},
		{"<answer>rock or roll</answer>", "rock or roll", nil, 1},
	} {
		r := verify(t, "qa", c.pred, c.ref, c.params)
		assert.InDelta(t, c.want, r.Score, 1e-12, "qa(%q, %q, %v) = %+v", c.pred, c.ref, c.params, r)
	}
}
