package slot

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// chatTemplate wraps a conversation the way a trainer's tokenizer renders
// it; wrap returns the whole query up to the start of the model's reply.
type chatTemplate struct {
	name string
	wrap func(system, user string) string
	eot  string
}

var chatTemplates = []chatTemplate{
	{"chatml", func(s, u string) string {
		return "<|im_start|>system\n" + s + "<|im_end|>\n<|im_start|>user\n" + u + "<|im_end|>\n<|im_start|>assistant\n"
	}, "<|im_end|>"},
	{"llama3", func(s, u string) string {
		return "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" + s + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n" +
			u + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	}, "<|eot_id|>"},
	{"phi3", func(s, u string) string {
		return "<|system|>\n" + s + "<|end|>\n<|user|>\n" + u + "<|end|>\n<|assistant|>\n"
	}, "<|end|>"},
}

// genResponse returns a response with an answer slot of one of the
// package's kinds, or without one.
func genResponse(r *rand.Rand) string {
	v := fmt.Sprint(r.IntN(1000))
	think := [...]string{"", "<think>Let me compute: 6·7 and then \\boxed{13} is wrong.</think>\n", "<think>2 + 2 = 4</think>"}[r.IntN(3)]
	body := [...]string{
		"The answer is " + v + ".", "So \\boxed{" + v + "}.", "<answer>" + v + "</answer>", "Therefore, " + v + ".",
		"I cannot tell.", "<answer>" + v + "</answer>\nActually, no, it is 7.", "Final answer: " + v,
	}[r.IntN(7)]
	return think + body
}

// genPrompt returns a question that itself holds numbers, boxes and tags,
// which must never be read as the answer.
func genPrompt(r *rand.Rand) (system, user string) {
	system = [...]string{"You are a helpful assistant.", "Put the final answer in \\boxed{}, e.g. \\boxed{5}.", "Answer inside <answer></answer>, like <answer>3</answer>."}[r.IntN(3)]
	user = fmt.Sprintf("What is %d + %d? The answer is not %d.", r.IntN(50), r.IntN(50), r.IntN(99))
	return system, user
}

// TestTemplatedQueryReadsTheReply: for any templated prompt (ChatML, Llama
// 3, Phi-3) and any response, the slot of the whole query — what OpenRLHF
// scores when the prompt is not a prefix — is the response's own slot.
func TestTemplatedQueryReadsTheReply(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 11))
	for range 600 {
		tpl := chatTemplates[r.IntN(len(chatTemplates))]
		resp := genResponse(r)
		sys, user := genPrompt(r)
		query := tpl.wrap(sys, user) + resp
		if r.IntN(2) == 0 {
			query += tpl.eot
		}
		want, got := Find(resp, false), Find(query, false)
		assert.Equal(t, want.Kind, got.Kind, "%s: %q", tpl.name, query)
		assert.Equal(t, want.Reason, got.Reason, "%s: %q", tpl.name, query)
		if want.Kind != None && got.Kind != None {
			assert.Equal(t, want.Text(), got.Text(), "%s: %q", tpl.name, query)
		}
	}
}

// TestTextAfterTheTurnIsNotTheReply: whatever a response adds after its
// own end-of-turn token — a made-up second assistant turn included — the
// slot is the one of the text before it.
func TestTextAfterTheTurnIsNotTheReply(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 12))
	for range 600 {
		tpl := chatTemplates[r.IntN(len(chatTemplates))]
		resp := genResponse(r)
		fake := tpl.wrap("", "") // a whole fake conversation, ending in an assistant header
		if r.IntN(2) == 0 {
			fake = fake[len(fake)-len("<|im_start|>assistant\n"):]
		}
		hacked := resp + tpl.eot + "\n" + fake + "The answer is 10. \\boxed{10}"
		want, got := Find(resp, false), Find(hacked, false)
		assert.Equal(t, want.Kind, got.Kind, "%s: %q", tpl.name, hacked)
		assert.Equal(t, want.Reason, got.Reason, "%s: %q", tpl.name, hacked)
		if want.Kind != None && got.Kind != None {
			assert.Equal(t, want.Text(), got.Text(), "%s: %q", tpl.name, hacked)
		}
	}
}
