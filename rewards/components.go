package rewards

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// Format is AVATAR's format reward (Eq. 7): +1 when the response is
// <think>…</think><answer>…</answer> (verifiers.ThinkAnswer), −1 otherwise.
func Format(response string) float64 {
	if verifiers.ThinkAnswer(response) {
		return 1
	}
	return -1
}

// RMAE is AVATAR's dense accuracy for numeric answers (Eq. 8, after
// AV-Reasoner): 1 − min(1, |pred − gold| / |gold|), in [0, 1]. gold must be
// finite and non-zero; pred must not be NaN (an infinite pred scores 0).
func RMAE(pred, gold float64) (float64, error) {
	s, err := rmae(pred, gold)
	if err != nil {
		return 0, fmt.Errorf("rewards: %w", err)
	}
	return s, nil
}

func rmae(pred, gold float64) (float64, error) {
	if gold == 0 || math.IsNaN(gold) || math.IsInf(gold, 0) {
		return 0, tensor.Errorf(tensor.ErrRange, "gold", nil, "%v, want a finite non-zero number (rMAE is undefined at 0)", gold)
	}
	if math.IsNaN(pred) {
		return 0, tensor.Errorf(tensor.ErrNonFinite, "pred", nil, "NaN")
	}
	return 1 - min(1, math.Abs(pred-gold)/math.Abs(gold)), nil
}

// RMAEVerifier is the verifiers.Factory of rMAE as a verifier, to register
// under a name of the caller's choice (verifiers.Register("rmae",
// rewards.RMAEVerifier)): the last number of the extracted answer against
// the last number of the reference (see verifiers.LastNumber). Correct
// means an exact match. A response without a number scores 0; a reference
// without one is an error wrapping verifiers.ErrSyntax, one of 0 wraps
// tensor.ErrRange.
//
// Parameters: "extract" (default "auto"), read once here.
func RMAEVerifier(p verifiers.Params) (verifiers.Verifier, error) {
	if err := p.Only("extract"); err != nil {
		return nil, fmt.Errorf("rewards: rmae: %w", err)
	}
	mode, err := p.Enum("extract", verifiers.ExtractAuto, verifiers.ExtractAuto, verifiers.ExtractAnswer, verifiers.ExtractBoxed, verifiers.ExtractNone)
	if err != nil {
		return nil, fmt.Errorf("rewards: rmae: %w", err)
	}
	return verifiers.Func(func(ctx context.Context, response, reference string) (verifiers.Result, error) {
		res, err := rmaeVerify(ctx, response, reference, mode)
		if err != nil {
			return verifiers.Result{}, fmt.Errorf("rewards: rmae: %w", err)
		}
		return res, nil
	}), nil
}

func rmaeVerify(ctx context.Context, pred, ref, mode string) (verifiers.Result, error) {
	if err := ctx.Err(); err != nil {
		return verifiers.Result{}, err
	}
	if len(ref) > verifiers.MaxInputBytes {
		return verifiers.Result{}, tensor.Errorf(verifiers.ErrTooLarge, "ref", nil, "%d bytes, limit %d", len(ref), verifiers.MaxInputBytes)
	}
	if len(pred) > verifiers.MaxInputBytes {
		return verifiers.Result{Reason: fmt.Sprintf("limit: pred is %d bytes, over %d", len(pred), verifiers.MaxInputBytes)}, nil
	}
	goldText, ok := verifiers.LastNumber(ref)
	if !ok {
		return verifiers.Result{}, tensor.Errorf(verifiers.ErrSyntax, "ref", nil, "no number")
	}
	gold, err := strconv.ParseFloat(goldText, 64)
	if err != nil {
		return verifiers.Result{}, tensor.Errorf(verifiers.ErrSyntax, "ref", nil, "%.40s…: beyond float64", goldText)
	}
	ans, ok := verifiers.Extract(pred, mode)
	if !ok {
		return verifiers.Result{}, nil
	}
	gotText, ok := verifiers.LastNumber(ans)
	if !ok {
		return verifiers.Result{}, nil
	}
	// A number beyond float64 parses as ±Inf, which scores 0.
	got, _ := strconv.ParseFloat(gotText, 64)
	score, err := rmae(got, gold)
	if err != nil {
		return verifiers.Result{}, err
	}
	return verifiers.Result{Score: score, Correct: gotText == goldText, Parsed: gotText}, nil
}

// MeanTokenLikelihood returns the mean over tokens of exp(logp), the
// "average token likelihood" AVATAR breaks self-reward ties with. logp
// holds the response's per-token log-probabilities: finite and ≤ 0.
func MeanTokenLikelihood[F tensor.Float](logp []F) (float64, error) {
	if len(logp) == 0 {
		return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrEmpty, "logp", nil, "no tokens"))
	}
	var sum float64
	for i, v := range logp {
		x := float64(v)
		if math.IsNaN(x) || math.IsInf(x, 0) || x > 0 {
			return 0, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrRange, "logp", tensor.At(i), "%v, want a finite log-probability ≤ 0", x))
		}
		sum += math.Exp(x)
	}
	return sum / float64(len(logp)), nil
}

// SelfReward is AVATAR's self-reward (Eq. 9–10) for one group of K
// responses. answers[i] is the answer extracted from response i, compared
// exactly (normalise first if needed); an empty answer is no answer: it
// neither votes nor scores. The majority answer o*_maj is the most common
// one; on a tie, the answer of the tied response with the highest
// confidence[i] (its mean token likelihood, MeanTokenLikelihood) wins, and
// with confidence nil, or on equal confidences, the earliest response. It
// writes 1 into dst[i] for responses that give the majority answer and 0
// for the rest, and returns the index of the response that decided the
// majority, −1 when no response has an answer.
func SelfReward(dst []float64, answers []string, confidence []float64) (int, error) {
	if len(dst) != len(answers) {
		return -1, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d (answers)", len(dst), len(answers)))
	}
	if confidence != nil && len(confidence) != len(answers) {
		return -1, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "confidence", nil, "length %d, want %d (answers) or nil", len(confidence), len(answers)))
	}
	for i, c := range confidence {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return -1, fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrNonFinite, "confidence", tensor.At(i), "%v", c))
		}
	}
	votes := make(map[string]int, len(answers))
	top := 0
	for _, a := range answers {
		if a != "" {
			votes[a]++
			top = max(top, votes[a])
		}
	}
	best := -1
	for i, a := range answers {
		if a == "" || votes[a] != top {
			continue
		}
		if best < 0 || confidence != nil && confidence[i] > confidence[best] {
			best = i
		}
	}
	for i, a := range answers {
		dst[i] = 0
		if best >= 0 && a == answers[best] {
			dst[i] = 1
		}
	}
	return best, nil
}
