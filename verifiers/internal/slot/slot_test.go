package slot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFind(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind Kind
		text string
	}{
		{"The answer is 42.", Phrase, "42"},
		{"So the final answer is $\\frac{1}{2}$. I hope it is correct.", Phrase, "$\\frac{1}{2}$"},
		{"blah \\boxed{3} and \\boxed{4}", Boxed, "3, 4"},
		{"blah \\boxed{3} then \\boxed{4}", Boxed, "4"}, // Others: 3, for the verifier to compare
		{"blah \\boxed{3} then \\boxed{ 3 }", Boxed, "3"},
		{"The answer is 3. Let me write \\boxed{4", None, ""},
		{"<think>the answer is 4</think>", None, ""},
		{"<think>the answer is 4", None, ""},
		{"<think>x</think><answer>Because the angle is obtuse, the answer is D.</answer>", Phrase, "D"},
		{"<answer>B</answer>", Tag, "B"},
		{"<answer> </answer>", None, ""},
		{"<answer>3</answer> more <answer>4", None, ""},
		{"A cat sat on the mat", None, ""},
		{"We compute stuff.\n$x = 5$", FinalLine, "$x = 5$"},
		{"We find that $x \\lt 3$.", FinalLine, "We find that $x \\lt 3$."},
		{"so we multiply 6 by 7 to get 42", None, ""},
		{"Answer:\n\n  17\n", Phrase, "17"},
		{"#### 72", Phrase, "72"},
		{"The answer is not 5.", None, ""},
		{"Option B", FinalLine, "Option B"},
		{"\\boxed{}", None, ""},
	} {
		s := Find(c.in, false)
		if s.Kind != c.kind || c.kind != None && s.Text() != c.text {
			t.Errorf("Find(%q) = %v %q (%s), want %v %q", c.in, s.Kind, s.Text(), s.Reason, c.kind, c.text)
		}
	}
}

func TestFindMore(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind Kind
		text string
	}{
		{"Thus $x <= 2$ is our answer.", Phrase, "Thus $x <= 2$"},
		{"Therefore $x \\geq 5$ is the solution.", Phrase, "Therefore $x \\geq 5$"},
		{"Answer $$ \n 9 \n $$", Phrase, "$$ \n 9 \n $$"},
		{"answer: ten, i.e. 10 apples", Phrase, "ten, i.e. 10 apples"},
		{`$$\boxed{(3, 3)} \text{ for part (a) and } \boxed{(1, 1)}$$`, Boxed, "(3, 3), (1, 1)"},
		{`\(y_1 = \boxed{a} \) and \( y_2 = \boxed{b} \)`, Boxed, "a, b"},
		{`are $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.$`, Boxed, `\\left( 3, \\frac{\\pi}{2} \\right)`},
		{`\begin{bmatrix}1 & 2\\3 & 4\end{bmatrix}`, FinalLine, `\begin{bmatrix}1 & 2\\3 & 4\end{bmatrix}`},
	} {
		s := Find(c.in, false)
		if s.Kind != c.kind || c.kind != None && s.Text() != c.text {
			t.Errorf("Find(%q) = %v %q (%s), want %v %q", c.in, s.Kind, s.Text(), s.Reason, c.kind, c.text)
		}
	}
}

func TestOthers(t *testing.T) {
	s := Find(`\boxed{3} then \boxed{ 3 } then \boxed{3.0} and finally \boxed{4}`, false)
	assert.Equal(t, Boxed, s.Kind)
	assert.Equal(t, "4", s.Text())
	assert.Equal(t, "4, 3, 3.0", s.All())
	if s := Find(`\boxed{1} then \boxed{3} and \boxed{4}`, false); s.Kind != None {
		t.Errorf("a list group besides another box: %v %q", s.Kind, s.All())
	}
}

func TestConcluding(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind Kind
		text string
	}{
		{"We compute a lot.\nTherefore, the total is 42.", FinalLine, "Therefore, the total is 42."},
		{"P = 2/3 Therefore, the probability is 2/3. <|im_start|>user", FinalLine, "Therefore, the probability is 2/3."},
		{"We compute. So we get 4 and then", None, ""},
		{"The shop has 42 apples.", None, ""},
		{"and so the value is 5.", None, ""},
	} {
		s := Find(c.in, false)
		if s.Kind != c.kind || c.kind != None && s.Text() != c.text {
			t.Errorf("Find(%q) = %v %q (%s), want %v %q", c.in, s.Kind, s.Text(), s.Reason, c.kind, c.text)
		}
	}
}

func TestBounded(t *testing.T) {
	for _, c := range []struct {
		text, value string
		want        bool
	}{
		{"The answer is at least 5.", "5", true},
		{"The answer is more than 5 apples.", "5", true},
		{"The answer is 5 or more.", "5", true},
		{"The answer is ≥ 5.", "5", true},
		{"The answer is 5.", "5", false},
		{"x > 5", "5", false},
		{"The answer is approximately 5.", "5", false},
		{"moreover 5", "5", false},
	} {
		i := strings.LastIndex(c.text, c.value)
		if got := Bounded(c.text, i, i+len(c.value)); got != c.want {
			t.Errorf("Bounded(%q, %q) = %v, want %v", c.text, c.value, got, c.want)
		}
	}
}
