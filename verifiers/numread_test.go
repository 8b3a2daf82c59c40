package verifiers_test

import (
	"strings"
	"testing"

	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
)

func TestReadNumbers(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []string // rationals as big.Rat renders them
		limited bool
	}{
		{"42", []string{"42/1"}, false},
		{"−3", []string{"-3/1"}, false},
		{"x = −2.5", []string{"-5/2"}, false},
		{"3-4", []string{"3/1", "4/1"}, false},
		{"1,234,567", []string{"1234567/1"}, false},
		{"1{,}234", []string{"1234/1"}, false},
		{"1\u2009234", []string{"1234/1"}, false},
		{"1,2", []string{"1/1", "2/1"}, false},
		{"1 234", []string{"1/1", "234/1"}, false},
		{"12,3456", []string{"12/1", "3456/1"}, false},
		{"3e5", []string{"300000/1"}, false},
		{"1.5e3", []string{"1500/1"}, false},
		{"1.5E-3", []string{"3/2000"}, false},
		{"1.5 \\times 10^{3}", []string{"1500/1"}, false},
		{"1.5 × 10^3", []string{"1500/1"}, false},
		{"3*10^5", []string{"300000/1"}, false},
		{"2^10", []string{"1024/1"}, false},
		{"2^{10}", []string{"1024/1"}, false},
		{"3/4", []string{"3/4"}, false},
		{"\\frac{3}{4}", []string{"3/4"}, false},
		{"-\\frac{3}{4}", []string{"-3/4"}, false},
		{"50%", []string{"50/1"}, false},
		{"50\\%", []string{"50/1"}, false},
		{"25 percent", []string{"25/1"}, false},
		{"x_1 = 7", []string{"7/1"}, false},
		{"5 m^2", []string{"5/1"}, false},
		{".5", []string{"1/2"}, false},
		{"1e99999", nil, true},
		{strings.Repeat("9", 5000), nil, true},
		{"2^99999", nil, true},
		{"no numbers", nil, false},
		{"x = − 3", []string{"-3/1"}, false},
		{"5 - 3", []string{"5/1", "3/1"}, false},
		{"10^{-3}", []string{"1/1000"}, false},
		{"0^{-1}", nil, false},
	} {
		got, lim := verifiers.ReadNumbers(c.in)
		var s []string
		for _, r := range got {
			s = append(s, r.String())
		}
		assert.Equal(t, strings.Join(c.want, " "), strings.Join(s, " "), "ReadNumbers(%.40q) = %v; want %v", c.in, s, c.want)
		assert.Equal(t, c.limited, lim, "ReadNumbers(%.40q) = %v; want %v", c.in, s, c.want)
	}
}

func TestReadChoice(t *testing.T) {
	for _, c := range []struct {
		in   string
		want rune
	}{
		{"B", 'B'}, {"(B)", 'B'}, {"B)", 'B'}, {"B.", 'B'}, {"b) a cat", 'B'}, {"Option B", 'B'},
		{"**C**", 'C'}, {`\textbf{(C)}`, 'C'}, {"The answer is (D)", 'D'}, {"B: 42", 'B'},
		{"I choose B.", 'B'}, {"B is correct", 'B'}, {"(B) because it beats (A)", 'B'},
		{"A cat sat", 0}, {"A, B, C, D", 0}, {"A or B", 0}, {"(A) (B) (C) (D)", 0},
		{"B) or D)", 0}, {"A/B", 0}, {"", 0}, {"42", 0},
	} {
		got, reason, ok := verifiers.ReadChoice(c.in)
		if ok != (c.want != 0) || ok && got != c.want || !ok && reason == "" {
			t.Errorf("ReadChoice(%q) = %q, %q, %v; want %q", c.in, got, reason, ok, c.want)
		}
	}
}
