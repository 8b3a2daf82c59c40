// Package mathverify decides whether a model's response states the same
// mathematical answer as a reference (docs/spec.md#math-verifier). It
// parses and compares answers as Hugging Face's Math-Verify does with
// sympy — LaTeX or plain text, compared by value — in pure Go with
// math/big, but reads a response's answer only from its answer slot
// (below), so that a policy cannot be paid for an answer it did not give.
// On Math-Verify's own test suite it gets 225 of the 232 matching and all
// 38 non-matching cases; the misses are responses without an answer slot,
// which Math-Verify reads by their last number, an equation of two
// different constants it reads by its last side, and one case whose
// expectation is mathematically wrong (1 − 1/e against 1 + 1/e).
//
//	v, err := mathverify.New(mathverify.DefaultOptions()) // once
//	res, err := v.Verify(ctx, response, `$\frac{1}{2}$`)     // per sample
//	// res.Correct, res.Score (1 or 0), res.Gold and res.Pred for logs
//
// Verify takes (ctx, response, reference), the order of every verifier of
// the module (package verifiers, docs/spec.md#rewards-and-verifiers). The
// package function Verify(ctx, gold, pred, opts) of earlier releases keeps
// its reverse order and is deprecated. A reference that does not parse
// (unbalanced braces, LaTeX the grammar rejects) is an error wrapping
// ErrSyntax rather than a 0 for every response.
//
// # Gold and pred
//
// The two sides are not symmetric. pred is a whole model response: only
// its extracted answer counts, and a response with no answer is simply not
// correct. gold is trusted: it may be a bare answer or a worked solution, it
// is extracted the same way but parsed more liberally (several \boxed
// answers separated by up to four words of any kind form one list answer,
// where a pred may separate them only by "and"/"or", \text{} and "name =";
// a gold of any length is parsed whole when nothing else is found, a pred
// only up to 200 bytes), and the comparison rules below give the gold the
// last word: a gold "x = 3" accepts "3", a gold relation accepts a pred set.
//
// # Answer slot
//
// A pred is read from its answer slot (docs/spec.md#answer-slot), the same
// rule the choice and number verifiers use: reasoning up to </think> is
// dropped, and a response cut off inside <think> has no answer; inside the
// last closed <answer> pair (if any), the slot is the last \boxed group or
// the sentence after the last answer phrase ("the final answer is",
// "Answer:", "####", or backwards "X is our answer"), whichever comes
// last; failing both, the <answer> content, a bare final line (a
// formula, or a sentence that ends with its only math environment) or a
// concluding sentence ("Therefore, the probability is 2/3."). No
// slot, an empty or unclosed <answer>, an unclosed final \boxed{, or boxes
// that disagree score 0 with Result.Reason; there is never a fallback to
// earlier text. The response is read as it renders (render.go): fenced
// code, LaTeX % comments, \phantom and echoed questions are dropped,
// colour and size macros are transparent, display math over lines is
// joined. A retraction or hedge after the slot ("Actually, no, it is 6"),
// a note to the grader after the reasoning, a \text{…} that hedges
// inside the slot (5 \text{(or possibly 6)}), or a value written as a
// bound (42+, \boxed{42}+, 42 (or more)) scores 0 with a reason. Inside the
// slot, extraction proceeds as below, and every
// constant value in the slot outside the chosen answer must equal it: "3
// or 4", "\boxed{3 \text{ or } 4}", "12, i.e. 13" score 0, while a value
// the slot rules out ("5, not 6") is ignored. Options.Lenient restores
// Math-Verify's reading of the whole response.
//
// # Extraction
//
// If the text holds <answer>…</answer>, only the content of the last such
// block is searched (an unclosed block runs to the end). Candidates are then
// collected and tried in order of priority, lower first; among equal
// priorities the one that ends last wins; the first that parses is the
// answer.
//
//	  0  \boxed{…} and \fbox{…} (Options.BoxedPriority, −1 = off), with
//	     consecutive boxes joined into a list as described above;
//	     "final answer is X", "final answer: X" (X right after the phrase)
//	     and GSM8K's "#### X"
//	 50  "final answer … is X" (up to 100 bytes between, one line); a choice
//	     letter that opens a line ("B. because …", MatchChoice only)
//	100  "answer is X", "answer: … X" (X within 50 bytes)
//	250  the whole text, when it is a formula: no $, \(, \[ or \boxed, and no
//	     word of three or more letters outside \text{} except function names,
//	     units and connectives ("\frac{x+1}{2}", "x = 3", "(1, 2]")
//	300  every math environment ($…$, $$…$$, \(…\), \[…\]; inline ones on one
//	     line), joined with neighbours separated only by "and", "or" or a
//	     comma; every plain-text number or arithmetic run ("1,000.99",
//	     "2/3", "-\frac{10}{9}", "28 percent") that is not glued to letters
//	     or part of a larger algebraic expression; every lone choice letter
//	     (MatchChoice)
//	400  the whole text (gold always, pred up to 200 bytes)
//
// X is whatever candidate of the enabled kinds starts there; a lone capital
// letter that ends the phrase ("the answer is (C).") is also taken. Options.Match chooses
// the kinds: MatchLatex (boxes and environments), MatchExpr (plain numbers),
// MatchChoice (letters among Options.Choices). A percent sign or word right
// after a box or environment ("$28$ %", "\boxed{20} percent") belongs to it.
//
// # Grammar
//
// One answer is parsed by recursive descent, loosest binding first:
//
//	answer   = item { ("," | ";" | "and" | "or" | \text{and}) item }
//	item     = setexpr { relop setexpr }          relop: = < > ≤ ≥ ≠ ∈ (\le, \geq, !=, …)
//	setexpr  = sum { (\cup | \cap | \setminus) sum }
//	sum      = term { ("+" | "-" | \pm | \mp) term }
//	term     = unary { ("*" | \cdot | \times | "/" | \div | ":" | juxtaposition) unary }
//	unary    = ("-" | "+" | \pm) unary | power
//	power    = postfix [ "^" exponent ]            right-associative; ^\circ is a degree mark
//	postfix  = primary { "!" | "%" | \% | "percent" | "°" | "'" }
//	primary  = number | name | command | \text{…} | ( … ) | [ … ] | { … } | \{ … \} | | … |
//
// Numbers: integers, decimals (".4"), scientific notation (1.5e3),
// repeating decimals (0.1\overline{6}), digit groups (1,000,000; 12{,}345;
// 12,\!345; 12\,345; 10 000), a decimal comma in plain text ("2,74"),
// mixed numbers (2\frac{1}{2} and "2 1/2" are 5/2; "21/2" is 21/2) and
// bases (204_5 is 54). In LaTeX a
// bare comma groups digits only outside brackets, so (2,100) is a pair. Names: one letter each, so
// "xy" is x·y; e and i are the constants; x_1, a_{n-1} are indexed names;
// f, g, h (and F, G, H) followed by ( are functions; Greek commands and
// unknown commands (\zzz) are names. Commands: \frac, \dfrac, \tfrac,
// \cfrac (\frac13 works), \sqrt, \sqrt[n], \binom, \pi, \infty, \sin … \cot
// and their inverses and hyperbolic forms (\sin^2 x, \sin^{-1}),
// \ln, \log, \log_b, \exp, \max, \min, \gcd, \lcm, \lfloor…\rfloor,
// \lceil…\rceil, |…|, \sum and \prod with bounds, \emptyset, \mathbb{R},
// \operatorname{…}, and matrix environments (pmatrix, bmatrix, matrix,
// vmatrix, array). Ignored: \left, \right, \big…, \displaystyle, spacing,
// \$, layout environments (align, equation), \pmod{…}. \text{…} after a
// value is a unit and dropped, as is \mathrm{~cm} and unit words ("cm", "miles", "dollars")
// that end a value and the scale after a degree (25^\circ C); \text{13} is 13; any other \text{…} is a text answer.
// "a ≈ b" keeps the exact side: the part before ≈ when it holds an "=",
// else the part after; "a ⇒ b" keeps b. Lists: "n = 1, 2, 3" is n ∈
// {1, 2, 3}; "p=5,q=2; p=7,q=2" is a set of pairs; (a, b) is a pair that may
// also be an open interval, [a, b), (a, b], [a, b] are intervals.
//
// # Comparison
//
//   - Numbers: exactly in math/big when both sides are rational (fractions,
//     powers, perfect roots, factorials, binomials); at Options.Precision
//     decimal places when a number written with a decimal point is involved
//     (1/3 and 0.333333 match at 6, not 0.33); otherwise in complex floating
//     point with relative tolerance 1e-11 (√8 and 2√2; not π and 355/113).
//     When float64 finds a Σ or Π equal to the other side, both are
//     recomputed at 256 bits and must agree to 2^−200 relative, so
//     Σ_{k≤10000} 1/k^50 is not 1.
//   - Expressions with variables: evaluated at 10 points drawn from a hash
//     of the two texts (variables in [0.35, 2.65], four of them in [0.05,
//     0.35] or [2.65, 4]; summation bounds integers 2…6) in complex
//     arithmetic; equal when they agree at every point where both are
//     defined, with at least 3 such points; a side with floor, ceil, sgn,
//     max or min also at 6 far points of both signs in [4, 1000]; then
//     again at the same points with negative and mixed signs, where both
//     sides are real, so that x, |x| and √(x²) stay apart (√(x²) = |x|). Unknown functions f(x) and
//     indexed names x_n become fixed pseudo-random smooth functions, so f(x)
//     equals f(x) but not f(y). Options.Strict (default) compares variables
//     by name; without it the pred's variables are renamed to the gold's.
//   - Marked numbers: 50% matches 0.5, 50 and 50%; 90° matches 90 and π/2
//     (and inside \sin etc. a degree is converted to radians); 204_5 matches
//     54 and 204.
//   - Equations: a gold "name = value" (name, f(x), |AB|, AB, NO/BO, (p, q))
//     and a gold chain "a = b = c" are answered by their last side; a pred
//     equation answers a non-equation gold by its last side (x = 5+5+1 = 11
//     answers 11). Two assignments to the same name compare their values;
//     other equations are equal when l₁ − r₁ = k·(l₂ − r₂), k ≠ 0 (2x+4y−3=0
//     and y = −x/2 + 3/4).
//   - Inequalities: chains compare part by part (or reversed with flipped
//     signs); one-variable conditions compare their truth at every constant,
//     beside it and between neighbours (x < 1 and −x > −1; x² < 4 and
//     −2 < x < 2); otherwise l − r must be a positive multiple.
//   - Relations and sets: a gold relation matches a pred interval or set
//     (x > 3 and (3, ∞); 0 < f(x) < 1 and (0, 1); 1 ≤ |z| ≤ 3/2 and
//     z ∈ [−3/2, −1] ∪ [1, 3/2]); a gold interval or union matches a pred
//     inequality in one variable, or inequalities joined by "or", as the
//     set they define (x > 2 and (2, ∞); x < 0 or x > 1 and
//     (−∞, 0) ∪ (1, ∞)); a gold finite set matches a pred relation only
//     with Options.AllowSetRelationComp. x ∈ S answers S.
//   - Multiple choice in the AMC style: when either side is written
//     "\textbf{(C)}\ 24" or "(C) 24", the other matches by the letter ("C",
//     "(C)") or by the value ("24"); two AMC forms need the same letter.
//   - Intervals and unions are sorted and merged ([0,1) ∪ [1,2] = [0,2]) and
//     compared endpoint by endpoint with their open/closed ends; finite sets
//     take part as points.
//   - Sets: order and repetition do not matter; a one-element set equals its
//     element. Tuples: order matters; a set equals a tuple only written in
//     increasing order ((1, 3) for {1, 3}); x = 3, y = −2 equals (3, −2).
//     ± expands to a set: 1 ± √2 is {1+√2, 1−√2}.
//   - Matrices: same shape, entry by entry; sums, products and scalar
//     multiples of matrices are evaluated first; a row or column matches a
//     tuple.
//   - Text (\text{…}, or a pred of letters such as "odd"): lower case,
//     letters and digits only ("(C)" is "c").
//   - Finally two answers match when their parsed trees render alike, or
//     when the extracted texts are identical (12:00 and 12:00).
//
// # Limits
//
// Verify never panics: a panic is recovered and returned as ErrInternal
// (the tests and fuzzers fail on it). Options bound the input length
// (MaxInputLen, 1 MiB), nesting (MaxDepth, 64), exact powers (MaxExponent,
// 10000; beyond it floating point), factorials and binomials (MaxFactorial,
// 1000). Work is bounded by count, not by the clock, so that a verdict
// never depends on the machine or its load: 40 000 steps (one per
// iteration of every loop and recursion) and 2²¹ word operations of exact
// big-number arithmetic (an operation on rationals of a and b 64-bit words
// costs (a+b)², charged before it runs). A call over either is a verdict:
// Score 0 and a Reason that begins "budget:". Wall time (Timeout, 1 s, and
// the context's deadline) is a last resort: a call it stops is Score 0
// with Timeout set, and WallTimeouts counts them; only a cancelled context
// is an error. Exact big-number arithmetic also stops at intermediates of
// 2¹⁸ bits (about 79 000 digits; 1000! has 2568) and falls back to
// floating point beyond. Fixed bounds: literals of 4096 digits and
// exponents of 4096, answers of 8 KiB, plain-text runs of 512 bytes, sums
// of 10000 terms, 64 ± variants, 4096 multiply-adds per matrix product,
// and the last 32 answer phrases, environments and numbers of a response
// (256 boxes). Extraction is linear in the length of the text. On any
// input up to 64 KiB a call takes under 50 ms of CPU and 16 MiB
// (TestHostileCost).
package mathverify
