package mathverify

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// ErrInternal wraps a panic recovered inside Verify. It is a bug in this
// package; tests and fuzzers fail on it.
var ErrInternal = errors.New("mathverify: internal error")

// Result is the verdict on one pred.
type Result struct {
	// Correct reports whether pred's answer equals gold's.
	Correct bool
	// Score is 1 when Correct, else 0.
	Score float64
	// Gold and Pred render what was extracted and parsed from each side,
	// for logs ("" when nothing was found; text that did not parse as
	// is), cut at 1000 bytes.
	Gold, Pred string
	// Timeout reports a call stopped by the context's deadline or
	// Options.Timeout before it could decide; Score is 0. A call stopped
	// by its work budget is not a timeout: Score 0, Reason "budget: …".
	Timeout bool
	// Reason says why a pred scored 0 without being judged: no answer
	// slot, several different answers, a malformed slot, a retraction or
	// a note to the grader, a work budget ("budget: …"), a timeout.
	Reason string
}

// testHookPanic, when set by a test, is called inside Verify's recovery
// scope so that the test can check that a panic becomes ErrInternal.
var testHookPanic func()

// Verifier is a checked Options, ready to verify any number of responses
// concurrently: Verify does not look at the options' validity again. Build
// one with New.
type Verifier struct {
	opts Options
}

// New checks opts and returns a Verifier that uses them.
func New(opts Options) (*Verifier, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Verifier{opts: opts}, nil
}

// Options returns the options v was built with.
func (v *Verifier) Options() Options { return v.opts }

// Verify reports whether response, the whole model output, states the
// same answer as reference, the trusted answer. The arguments come in the
// order of every verifier of this module: response first, reference
// second. reference may be a bare answer or a worked solution. Both are
// extracted and parsed as the package documentation describes.
//
// The error is non-nil for input over Options.MaxInputLen, an empty
// reference (ErrEmpty), a reference that does not parse (ErrSyntax), a
// cancelled context; a response without any answer is simply not
// correct, with Result.Reason saying why.
func (v *Verifier) Verify(ctx context.Context, response, reference string) (Result, error) {
	return verify(ctx, response, reference, &v.opts)
}

// Verify reports whether the model output pred answers like the reference
// gold, under opts.
//
// Deprecated: Verify takes the reference first, unlike every other
// verifier of this module, and checks opts on every call. Use
// New(opts) once and then (*Verifier).Verify(ctx, response, reference).
// Verify is kept, with its argument order unchanged, for one release.
func Verify(ctx context.Context, gold, pred string, opts Options) (Result, error) {
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	return verify(ctx, pred, gold, &opts)
}

func verify(ctx context.Context, pred, gold string, o *Options) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("%w: %v\n%s", ErrInternal, r, debug.Stack())
		}
	}()
	opts := o // read only: a Verifier shares its options between calls
	for _, in := range [...]struct{ name, s string }{{"reference", gold}, {"response", pred}} {
		if len(in.s) > opts.MaxInputLen {
			return Result{}, fmt.Errorf("mathverify: %w", tensor.Errorf(tensor.ErrRange, in.name, nil,
				"%d bytes, limit %d (Options.MaxInputLen)", len(in.s), opts.MaxInputLen))
		}
	}
	if strings.TrimSpace(gold) == "" {
		return Result{}, fmt.Errorf("mathverify: %w", tensor.Errorf(tensor.ErrEmpty, "reference", nil, "no reference answer"))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	bud := newBudget(ctx, opts.Timeout)
	if !bud.check() {
		if err := timedOut(bud); err != nil {
			return Result{}, err
		}
		return Result{Timeout: true, Reason: bud.reason()}, nil
	}
	if testHookPanic != nil {
		testHookPanic()
	}
	gold = rendered(gold)
	ga, _ := extract(gold, opts, true, slot.None, bud)
	if err := referenceSyntax(gold, ga); err != nil {
		if err := timedOut(bud); err != nil {
			return Result{}, err
		}
		if bud.err != nil {
			return Result{Timeout: bud.timeout(), Reason: bud.reason()}, nil
		}
		return Result{}, err
	}
	var (
		pa     answer
		others []*node
	)
	if opts.Lenient {
		pa, _ = extract(pred, opts, false, slot.None, bud)
	} else {
		pred = rendered(pred)
		s := slot.Find(pred, false)
		if s.Kind == slot.None {
			return Result{Gold: ga.String(), Reason: s.Reason}, timedOut(bud)
		}
		if toGrader(pred[afterThink(pred):]) {
			return Result{Gold: ga.String(), Reason: "a note to the grader, not an answer"}, nil
		}
		if slot.Retracts(pred[s.End:min(len(pred), s.End+maxTail)]) {
			return Result{Gold: ga.String(), Reason: "the answer is retracted or hedged after it"}, nil
		}
		if boundAround(pred, s.Start, s.End) {
			return Result{Gold: ga.String(), Reason: "a bound (42+, 42 or more), not a value"}, nil
		}
		if textHedged(pred[s.Start:s.End]) {
			return Result{Gold: ga.String(), Reason: "a hedge inside \\text{…}: several candidates"}, nil
		}
		pa, others = extract(pred[s.Start:s.End], opts, false, s.Kind, bud)
		if pa.limited {
			return Result{Gold: ga.String(), Reason: fmt.Sprintf("limit: the answer is over %d bytes", maxAnswerLen)}, nil
		}
		for _, o := range s.Others {
			n, err := parseAnswer(o, false, opts.MaxDepth, bud)
			if err != nil || pa.node == nil {
				return Result{Gold: ga.String(), Pred: pa.String(), Reason: "several different \\boxed{} answers"}, nil
			}
			others = append(others, n)
		}
	}
	c := &comparer{o: opts, ev: &evaluator{o: opts, bud: bud}, bud: bud, seed: seedOf(gold, pred)}
	for _, o := range others {
		if !c.equal(pa.node, o) && bud.err == nil {
			return Result{Gold: ga.String(), Pred: pa.String(), Reason: "several different answers in the slot"}, nil
		}
	}
	if pa.bounded {
		return Result{Gold: ga.String(), Pred: pa.String(), Reason: "a bound (at least, more than, or more, …), not a value"}, nil
	}
	if pa.node != nil && !opts.Lenient && c.falseChain(pa.node) {
		return Result{Gold: ga.String(), Pred: pa.String(), Reason: "several different answers in the slot (a false equation of constants)"}, nil
	}
	correct := c.answersEqual(ga, pa)
	if err := timedOut(bud); err != nil {
		return Result{}, err
	}
	if bud.err != nil {
		return Result{Gold: ga.String(), Pred: pa.String(), Timeout: bud.timeout(), Reason: bud.reason()}, nil
	}
	res = Result{Correct: correct, Gold: ga.String(), Pred: pa.String()}
	if correct {
		res.Score = 1
	}
	return res, nil
}

// falseChain reports an equation whose sides are all constants that are
// not all equal: "\boxed{6 = 5}" states two answers, and is not read by
// its last side. Chains that start with a name ("x = 5+5+1 = 11") keep
// Math-Verify's reading by the last side.
func (c *comparer) falseChain(n *node) bool {
	if n.k != kRel || !allOps(n, opEq) {
		return false
	}
	for _, a := range n.args {
		if len(freeVars(a).names) != 0 {
			return false
		}
	}
	for _, a := range n.args[1:] {
		if !c.equal(n.args[0], a) {
			return true
		}
	}
	return false
}

// timedOut returns the budget's error when the caller cancelled the
// context: that is the caller's decision, not a verdict. An expired
// deadline or time budget is a verdict instead (Result.Timeout).
func timedOut(bud *budget) error {
	if bud.err != nil && errors.Is(bud.err, context.Canceled) {
		return fmt.Errorf("mathverify: %w", bud.err)
	}
	return nil
}

// maxRender bounds the text of Result.Gold and Result.Pred.
const maxRender = 1000

// String renders the answer for Result.Gold and Result.Pred: the parsed
// tree when it reads as mathematics (\frac{1}{2} as 1/2), else the text as
// extracted with its runs of space collapsed. A tree that multiplies
// letters implicitly ("I don't know" parsed as I·d·o·n′·t·k·n·o·w) is
// words, not a formula, and is shown as written.
func (a answer) String() string {
	s := a.raw
	if a.node != nil {
		if r := a.node.String(); !letterProduct(r) || strings.TrimSpace(a.raw) == "" {
			s = r
		}
	}
	s = collapseSpace(s)
	if len(s) <= maxRender {
		return s
	}
	cut := maxRender
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// collapseSpace trims s and collapses its runs of white space to one
// space, without allocating when there is nothing to collapse.
func collapseSpace(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' && (i == 0 || i == len(s)-1 || s[i+1] == ' ') || c != ' ' && (c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c >= utf8.RuneSelf) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// letterProduct reports a rendering that multiplies two letters, "x*y"
// or "n'*t": the mark of words read as a product of variables.
func letterProduct(r string) bool {
	for i := 1; i+1 < len(r); i++ {
		if r[i] != '*' {
			continue
		}
		j := i - 1
		if r[j] == '\'' && j > 0 {
			j--
		}
		if isLetter(r[j]) && isLetter(r[i+1]) {
			return true
		}
	}
	return false
}

// answersEqual compares the extracted answers: their trees, then their
// texts, since an answer that does not parse (12:00) still equals itself.
func (c *comparer) answersEqual(g, p answer) bool {
	if eq, done := c.amcEqual(g.raw, p.raw); done {
		return eq
	}
	if g.node != nil && p.node != nil {
		gn, pn := expandPM(g.node), expandPM(p.node)
		if !c.o.Strict {
			pn = renameVars(pn, gn)
		}
		if c.equal(gn, pn) || gn.String() == pn.String() {
			return true
		}
	}
	return g.raw != "" && strings.Join(strings.Fields(g.raw), " ") == strings.Join(strings.Fields(p.raw), " ")
}

// renameVars renames p's free variables to g's, both sorted by name, when
// they are as many: f(y) then compares with f(x).
func renameVars(p, g *node) *node {
	gv, pv := freeVars(g).names, freeVars(p).names
	if len(gv) != len(pv) || len(gv) == 0 {
		return p
	}
	ren := make(map[string]string, len(pv))
	for i := range pv {
		ren[pv[i]] = gv[i]
	}
	return p.clone(ren)
}

// maxPMVariants bounds the expansion of ± signs.
const maxPMVariants = 64

// expandPM turns an answer with ± into the set of its values:
// 1 ± √19 → {1 + √19, 1 − √19}; inside a set the values join the set, in
// a relation the side becomes a set.
func expandPM(n *node) *node {
	switch n.k {
	case kSet:
		out := make([]*node, 0, len(n.args))
		for _, e := range n.args {
			x := expandPM(e)
			if x.k == kSet && e.k != kSet {
				out = append(out, x.args...)
			} else {
				out = append(out, x)
			}
		}
		return &node{k: kSet, args: out}
	case kRel:
		c := *n
		c.args = make([]*node, len(n.args))
		for i, a := range n.args {
			c.args[i] = expandPM(a)
		}
		return &c
	}
	if !n.has(func(x *node) bool { return x.k == kPM }) {
		return n
	}
	vs := variants(n)
	if len(vs) < 2 || len(vs) > maxPMVariants {
		return n
	}
	return &node{k: kSet, args: vs}
}

// variants returns the trees obtained by choosing + or − at every ±.
func variants(n *node) []*node {
	if n == nil {
		return []*node{nil}
	}
	if n.k == kPM {
		var out []*node
		for _, a := range variants(n.args[0]) {
			for _, b := range variants(n.args[1]) {
				plus, minus := b, neg(b)
				if n.name == "mp" {
					plus, minus = minus, plus
				}
				for _, t := range [2]*node{plus, minus} {
					if a == nil {
						out = append(out, t)
					} else {
						out = append(out, bin(kAdd, a, t))
					}
				}
				if len(out) > maxPMVariants {
					return out
				}
			}
		}
		return out
	}
	if len(n.args) == 0 || n.k == kSet || n.k == kRel {
		return []*node{n}
	}
	combos := [][]*node{nil}
	for _, a := range n.args {
		vs := variants(a)
		var next [][]*node
		for _, c := range combos {
			for _, v := range vs {
				nc := append(append([]*node(nil), c...), v)
				next = append(next, nc)
			}
		}
		combos = next
		if len(combos) > maxPMVariants {
			return []*node{n}
		}
	}
	out := make([]*node, len(combos))
	for i, c := range combos {
		m := *n
		m.args = c
		out[i] = &m
	}
	return out
}

// referenceSyntax reports a reference that does not parse, as an error
// wrapping ErrSyntax: one whose braces do not balance (`\frac{`, `}}}`),
// one from which nothing could be extracted, or one whose extracted answer
// is LaTeX (it holds a backslash, a brace, ^ or _) that the grammar
// rejects. A reference is trusted, so scoring every response 0 against it
// would hide the trainer's mistake; plain text that does not parse
// ("12:00") stays an answer compared as text.
func referenceSyntax(ref string, a answer) error {
	depth := 0
	for i := 0; i < len(ref); i++ {
		switch ref[i] {
		case '\\':
			i++ // \{ and \} are literal braces, not groups
		case '{':
			depth++
		case '}':
			depth--
			if depth < 0 {
				return fmt.Errorf("mathverify: %w", tensor.Errorf(ErrSyntax, "reference", nil, "a '}' at byte %d closes no group", i))
			}
		}
	}
	switch {
	case depth > 0:
		return fmt.Errorf("mathverify: %w", tensor.Errorf(ErrSyntax, "reference", nil, "%d unclosed '{'", depth))
	case a.node == nil && strings.TrimSpace(a.raw) == "":
		return fmt.Errorf("mathverify: %w", tensor.Errorf(ErrSyntax, "reference", nil, "no answer found"))
	case a.node == nil && strings.ContainsAny(a.raw, `\{}^_`):
		return fmt.Errorf("mathverify: %w", tensor.Errorf(ErrSyntax, "reference", nil, "%q does not parse", clipText(a.raw)))
	}
	return nil
}

// clipText cuts s for an error message.
func clipText(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
