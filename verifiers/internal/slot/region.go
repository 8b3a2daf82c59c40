package slot

import "strings"

// Region is the final answer region of a response, steps 0–2 of the
// rule: the text after the reasoning, narrowed to the content of the last
// closed <answer> pair when there is one. Verifiers whose answers are not
// short values (boxes, detections, intervals, dictionaries, recognised
// text, code) look for their candidates there.
type Region struct {
	// Start and End delimit the region in the response.
	Start, End int
	// Tagged reports a region that is the content of an <answer> pair.
	Tagged bool
	// After is the response after the region up to its end-of-turn token:
	// what follows </answer>, or "" for an untagged region. A retraction
	// there withdraws the answer.
	After string
	// Reason explains why there is no region ("" when there is one).
	Reason string
}

// FindRegion returns the answer region of resp.
func FindRegion(resp string) Region {
	off, end, tagged, reason := region(resp)
	if reason != "" {
		return Region{Reason: reason}
	}
	if strings.TrimSpace(resp[off:end]) == "" {
		return Region{Reason: reasonEmpty}
	}
	r := Region{Start: off, End: end, Tagged: tagged}
	if tagged {
		r.After = endOfTurn(resp)[end+len("</answer>"):]
	}
	return r
}

// endOfTurn cuts resp at the end of its answering turn (step 0, turn).
func endOfTurn(resp string) string {
	_, end := turn(resp)
	return resp[:end]
}

// assistantHeaders open an assistant turn in the chat templates of ChatML
// (Qwen), Llama 3 and Phi-3.
var assistantHeaders = [...]string{"<|im_start|>assistant", "<|start_header_id|>assistant<|end_header_id|>", "<|assistant|>"}

// endOfTurnTokens end a turn (or the text) in those templates.
var endOfTurnTokens = [...]string{"<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<|start_header_id|>"}

// turnOpeners open a turn in those templates, and beginTokens may come
// before the first turn.
var (
	turnOpeners = [...]string{"<|im_start|>", "<|start_header_id|>", "<|system|>", "<|user|>", "<|assistant|>"}
	beginTokens = [...]string{"<|begin_of_text|>", "<|endoftext|>", "<s>"}
)

// turn returns the model's answering turn of resp, [begin, end) (step 0).
// A response that is a chat template's whole conversation — it opens with
// a turn header, as the query does that a trainer scores whole when the
// prompt is not a prefix of it (OpenRLHF's fallback) — is read from after
// its last assistant header. Any response ends at its first end-of-turn
// token after that: what a model writes after ending its turn (a second,
// made-up assistant turn included) is not its answer.
func turn(resp string) (begin, end int) {
	if templated(resp) {
		for _, h := range assistantHeaders {
			if k := strings.LastIndex(resp, h); k >= 0 && k+len(h) > begin {
				begin = k + len(h)
			}
		}
	}
	end = len(resp)
	for _, tok := range endOfTurnTokens {
		if k := strings.Index(resp[begin:end], tok); k >= 0 {
			end = begin + k
		}
	}
	return begin, end
}

// templated reports a response that opens, after white space and
// beginning-of-text tokens, with a chat template's turn header.
func templated(resp string) bool {
	t := strings.TrimLeft(resp, " \t\r\n")
	for again := true; again; {
		again = false
		for _, b := range beginTokens {
			if strings.HasPrefix(t, b) {
				t, again = strings.TrimLeft(t[len(b):], " \t\r\n"), true
			}
		}
	}
	for _, o := range turnOpeners {
		if strings.HasPrefix(t, o) {
			return true
		}
	}
	return false
}

// ReasonRetracted is the reason of an answer withdrawn by what follows it.
const ReasonRetracted = "the answer is retracted or replaced after it (\"actually\", \"wait\", \"that's wrong\", …)"

// sentence-opening cues that withdraw or reopen an answer given before
// them; interjections ("but", "oh", "hmm", "well") before them are skipped.
var retractOpeners = [...]string{"actually", "wait, no", "wait no", "wait, that", "wait, actually", "wait, it",
	"wait, the answer", "wait, i was", "wait, i made", "wait, this is", "hold on, no", "hold on, that",
	"oops", "correction", "sorry", "no,", "no.", "no!", "no wait",
	"on second thought", "on reflection", "scratch that", "never mind", "nevermind", "i mean", "let me correct",
	"let me reconsider", "let me recompute", "let me redo", "i made a mistake", "i made an error", "rather,",
	"instead,", "or", "alternatively", "it could also be", "it might also be", "either"}

// phrases anywhere that say the answer given is wrong or to be ignored.
var retractPhrases = [...]string{"that's wrong", "that is wrong", "this is wrong", "that was wrong", "i was wrong",
	"that's incorrect", "that is incorrect", "this is incorrect", "that was incorrect", "above is wrong",
	"above is incorrect", "my answer is wrong", "my answer is incorrect", "my mistake", "made a mistake",
	"made an error", "i retract", "disregard", "ignore the above", "ignore that", "ignore my", "ignore the previous",
	"not my final answer", "not the final answer", "is not the answer", "isn't the answer", "not my answer",
	"to the grader", "dear grader", "note to the grader", "grader:", "mark this as correct", "mark it as correct",
	"mark as correct", "score this as correct", "treat this as correct", "award full", "give full credit",
	"not sure", "unsure", "i'm not certain", "i am not certain", "not right", "nope", "the correct answer is",
	"the real answer is", "the true answer is", "the actual answer is", "it should be", "should have been",
	"or maybe", "or possibly", "or perhaps"}

// hedges that offer another value when a number follows in the same
// sentence: "maybe 7", "possibly x = 6".
var hedgeWords = [...]string{"maybe", "possibly", "perhaps", "alternatively"}

// Retracts reports whether text that follows an answer withdraws or
// reopens it: a sentence or line opening with a cue such as "Actually",
// "Wait, no", "Oops", "No,", "On second thought", "Or" (not "Or
// equivalently"; after interjections
// such as "But", "Hmm", "Oh"), or a phrase anywhere saying the answer is
// wrong or to be ignored ("that's wrong", "I made a mistake",
// "disregard"), or addressing the grader. The text should be normalised
// first (package norm). It runs in time linear in len(text).
func Retracts(text string) bool {
	if strings.TrimSpace(text) == "" {
		return false
	}
	lower := strings.ToLower(text)
	for _, p := range retractPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	if hedgesANumber(lower) {
		return true
	}
	for i := 0; i < len(lower); {
		// The start of a sentence: skip marks and interjections.
		j := skipOpen(lower, i)
		for _, w := range [...]string{"but", "hmm", "oh", "ah", "well", "and", "um", "uh", "so"} {
			if wordAtFold(lower, j, w) {
				j = skipOpen(lower, j+len(w))
			}
		}
		for _, c := range retractOpeners {
			if strings.HasPrefix(lower[j:], c) && (len(lower) == j+len(c) || !isLetter(lower[j+len(c)]) || !isLetter(c[len(c)-1])) {
				if c == "or" && restates(lower[j+2:]) {
					break
				}
				return true
			}
		}
		// The next sentence.
		k := strings.IndexAny(lower[j:], ".!?\n;")
		if k < 0 {
			break
		}
		i = j + k + 1
	}
	return false
}

// hedgesANumber reports a hedge word followed by a digit within 40 bytes
// of the same sentence.
func hedgesANumber(lower string) bool {
	for _, w := range hedgeWords {
		for i := 0; ; {
			k := strings.Index(lower[i:], w)
			if k < 0 {
				break
			}
			k += i
			i = k + len(w)
			if k > 0 && isLetter(lower[k-1]) || i < len(lower) && isLetter(lower[i]) {
				continue
			}
			for j := i; j < len(lower) && j < i+40; j++ {
				if c := lower[j]; c == '.' || c == '\n' {
					break
				} else if c >= '0' && c <= '9' {
					return true
				}
			}
		}
	}
	return false
}

// restates reports an "or" that restates the answer in another form
// rather than offering another: "or equivalently", "or in other words".
func restates(t string) bool {
	t = strings.TrimLeft(t, " ,")
	for _, w := range [...]string{"equivalently", "in other words", "simply", "written as", "in simplest form", "expressed as"} {
		if strings.HasPrefix(t, w) {
			return true
		}
	}
	return false
}

// skipOpen skips what may precede the first word of a sentence.
func skipOpen(t string, i int) int {
	for i < len(t) && strings.IndexByte(" \t\r\n*_-,:()\"'`$>#", t[i]) >= 0 {
		i++
	}
	return i
}
