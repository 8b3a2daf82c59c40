package rewards_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVerdict(t *testing.T) {
	for reply, want := range map[string]bool{
		"<think>box0 is above the player, as stated.</think><answer>YES</answer>": true,
		"<think>the direction is wrong</think><answer>NO</answer>":                false,
		"<think>x</think><answer> yes. </answer>":                                 true,
		"<answer>**No**</answer>":                                                 false,
		"YES":                                                                     true,
		"<answer>NO</answer> wait <answer>YES</answer>":                           true, // the last block
	} {
		got, err := rewards.ParseVerdict(reply)
		require.NoError(t, err, "ParseVerdict(%q)", reply)
		assert.Equal(t, want, got, "ParseVerdict(%q)", reply)
	}
	for _, reply := range []string{"", "<answer>maybe</answer>", "<answer>YES", "yes, the box is above", "<answer>YESNO</answer>"} {
		_, err := rewards.ParseVerdict(reply)
		assert.ErrorIs(t, err, rewards.ErrVerdict, "ParseVerdict(%q) error = %v, want ErrVerdict", reply, err)
	}
}

func TestVerdictJudge(t *testing.T) {
	reply := "<think>ok</think><answer>YES</answer>"
	j := rewards.VerdictJudge(func(_ context.Context, req rewards.JudgeRequest) (string, error) { return reply, nil })
	s, err := rewards.AskJudge(context.Background(), j, rewards.JudgeRequest{Response: "r"}, 0)
	require.NoError(t, err, "YES")
	require.Equal(t, float64(1), s, "YES")
	reply = "<answer>NO</answer>"
	s, err = rewards.AskJudge(context.Background(), j, rewards.JudgeRequest{}, 0)
	require.NoError(t, err, "NO")
	require.Equal(t, float64(0), s, "NO")
	reply = "I cannot tell"
	_, err = rewards.AskJudge(context.Background(), j, rewards.JudgeRequest{}, 0)
	require.ErrorIs(t, err, rewards.ErrJudge, "no verdict, want ErrJudge and ErrVerdict")
	require.ErrorIs(t, err, rewards.ErrVerdict, "no verdict, want ErrJudge and ErrVerdict")
}

func TestRepetitionTrackerVAGEN(t *testing.T) {
	cfg := rewards.VAGENRepetitionConfig()
	require.Equal(t, 0.7, cfg.Threshold, "VAGEN's Sokoban values are threshold 0.7, penalty −0.1; got %+v", cfg)
	require.Equal(t, 0.1, cfg.Penalty, "VAGEN's Sokoban values are threshold 0.7, penalty −0.1; got %+v", cfg)
	tr, err := rewards.NewRepetitionTracker(cfg)
	require.NoError(t, err)
	const s = "The box is below the player."
	// Nothing recorded: nothing is a repeat.
	p, rep, err := tr.Penalty(s, 0.1)
	require.Equal(t, float64(0), p, "empty history")
	require.False(t, rep, "empty history")
	require.NoError(t, err, "empty history")
	tr.Record(s, s, "the target is left")
	// Repeated and wrong (F1 < 0.7): −0.1. Case and spacing do not matter.
	if p, rep, _ := tr.Penalty("the box is  below the PLAYER.", 0.5); p != -0.1 || !rep {
		t.Errorf("repeated and F1 0.5: %v, %v; want −0.1", p, rep)
	}
	// Both conditions are needed.
	if p, rep, _ := tr.Penalty(s, 0.7); p != 0 || !rep {
		t.Errorf("repeated but F1 0.7: %v, %v; want 0", p, rep)
	}
	if p, rep, _ := tr.Penalty("a new sentence", 0); p != 0 || rep {
		t.Errorf("new sentence: %v, %v; want 0", p, rep)
	}
	_, _, err = tr.Penalty(s, math.NaN())
	assert.ErrorIs(t, err, tensor.ErrRange, "NaN F1")
	if top := tr.Top(); len(top) != 2 || top[0] != (rewards.SentenceCount{Sentence: "the box is below the player.", Count: 2}) {
		t.Errorf("Top = %v", top)
	}
}

func TestRepetitionTrackerTopKAndBound(t *testing.T) {
	cfg := rewards.VAGENRepetitionConfig()
	cfg.TopK, cfg.MaxSentences = 2, 8
	tr, err := rewards.NewRepetitionTracker(cfg)
	require.NoError(t, err)
	tr.Record("a", "a", "a", "b", "b", "c")
	if _, rep, _ := tr.Penalty("c", 0); rep {
		t.Error("c is third most frequent, outside a top 2")
	}
	tr.Record("c", "c", "c")
	if _, rep, _ := tr.Penalty("c", 0); !rep {
		t.Error("c (4) is now the most frequent")
	}
	if _, rep, _ := tr.Penalty("b", 0); rep {
		t.Error("b (2) fell out of the top 2")
	}
	for i := range 20 {
		tr.Record(strings.Repeat("x", i+1))
	}
	if n := tr.Len(); n > cfg.MaxSentences {
		t.Errorf("%d sentences remembered, bound %d", n, cfg.MaxSentences)
	}
	if _, rep, _ := tr.Penalty("c", 0); !rep {
		t.Error("forgetting dropped a frequent sentence")
	}
	_, err = rewards.NewRepetitionTracker(rewards.RepetitionConfig{})
	assert.ErrorIs(t, err, tensor.ErrRange, "zero config: %v, want ErrRange", err)
}

func TestRepetitionTrackerSnapshot(t *testing.T) {
	tr, _ := rewards.NewRepetitionTracker(rewards.VAGENRepetitionConfig())
	tr.Record("go down", "go down", "push left", strings.Repeat("long ", 400))
	var buf bytes.Buffer
	require.NoError(t, tr.Snapshot(&buf))
	back, err := rewards.RestoreRepetitionTracker(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, tr.Config(), back.Config(), "restored")
	require.Equal(t, tr.Len(), back.Len(), "restored")
	a, b := tr.Top(), back.Top()
	for i := range a {
		require.Equal(t, b[i], a[i], "Top after restore = %v, want %v", b, a)
	}
	for _, bad := range []string{
		`{"format": "other"}`,
		`{"format": "rlpost.repetition/1", "config": {"TopK": 0}}`,
		`{"format": "rlpost.repetition/1", "config": {"TopK": 1, "Threshold": 0.7, "Penalty": 0.1, "MaxSentences": 4}, "counts": [{"sentence": "a", "count": 0}]}`,
		`{"format": "rlpost.repetition/1", "config": {"TopK": 1, "Threshold": 0.7, "Penalty": 0.1, "MaxSentences": 4}, "counts": [{"sentence": "A", "count": 1}]}`,
		`{"format": "rlpost.repetition/1", "config": {"TopK": 1, "Threshold": 0.7, "Penalty": 0.1, "MaxSentences": 4}, "counts": [{"sentence": "a", "count": 1}, {"sentence": "a", "count": 2}]}`,
		`not json`,
	} {
		_, err := rewards.RestoreRepetitionTracker(strings.NewReader(bad))
		assert.ErrorIs(t, err, rewards.ErrRepetitionSnapshot, "restore %s: %v, want ErrRepetitionSnapshot", bad, err)
	}
}

// Scoring a batch concurrently and recording it afterwards gives the same
// penalties whatever the scheduling (run with -race).
func TestRepetitionTrackerConcurrent(t *testing.T) {
	tr, _ := rewards.NewRepetitionTracker(rewards.VAGENRepetitionConfig())
	tr.Record("same", "same")
	var wg sync.WaitGroup
	pen := make([]float64, 64)
	for i := range pen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pen[i], _, _ = tr.Penalty("same", 0.2)
			if i%8 == 0 {
				var buf bytes.Buffer
				_ = tr.Snapshot(&buf)
			}
		}()
	}
	wg.Wait()
	tr.Record(slices64("same")...)
	for i, p := range pen {
		require.Equal(t, -0.1, p, "penalty %d", i)
	}
}

func slices64(s string) []string {
	out := make([]string, 64)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestScoreStructured(t *testing.T) {
	truth := `{"player": "row 2", "box0": ["above player", "left of target0"]}`
	tr, _ := rewards.NewRepetitionTracker(rewards.VAGENRepetitionConfig())
	const sentence = "The box is above the player."
	s, err := rewards.ScoreStructured(tr, sentence, `{"player": "row 2", "box0": ["above player"]}`, truth)
	require.NoError(t, err, "first time: %+v", s)
	require.InDelta(t, 0.8, s.F1, 1e-12, "first time: %+v", s)
	require.Equal(t, float64(0), s.Penalty, "first time: %+v", s)
	require.Equal(t, s.F1, s.Reward, "first time: %+v", s)
	tr.Record(sentence)
	// The same sentence again with F1 = 0.5 < 0.7: −0.1.
	s, err = rewards.ScoreStructured(tr, sentence, `{"player": "row 2", "box0": ["below player"]}`, truth)
	require.NoError(t, err, "repeated and wrong: %+v", s)
	require.InDelta(t, 0.4, s.F1, 1e-12, "repeated and wrong: %+v", s)
	require.True(t, s.Repeated, "repeated and wrong: %+v", s)
	require.Equal(t, -0.1, s.Penalty, "repeated and wrong: %+v", s)
	require.InDelta(t, 0.3, s.Reward, 1e-12, "repeated and wrong: %+v", s)
	s, err = rewards.ScoreStructured(nil, sentence, "garbage", truth)
	require.NoError(t, err, "unparseable dictionary: %+v; want F1 0", s)
	assert.Equal(t, float64(0), s.F1, "unparseable dictionary: %+v; want F1 0", s)
	assert.Equal(t, float64(0), s.Reward, "unparseable dictionary: %+v; want F1 0", s)
	_, err = rewards.ScoreStructured(nil, sentence, "{}", "garbage")
	assert.ErrorIs(t, err, verifiers.ErrSyntax, "bad truth: %v, want ErrSyntax", err)
}

func TestFixedIoU(t *testing.T) {
	d, err := rewards.NewFixedIoU(rewards.DefaultFixedIoUThreshold)
	require.NoError(t, err)
	require.NoError(t, d.Record("coco", 0.9, 0.5, 0.2))
	// IoU([0,0,10,5], [0,0,10,10]) = 0.5: a hit at IoU@50.
	require.NoError(t, d.RecordBox("refcoco", "<answer>[0,0,10,5]</answer>", "[0,0,10,10]"))
	require.NoError(t, d.RecordBox("refcoco", "no box", "[0,0,10,10]"))
	assert.ErrorIs(t, d.Record("coco", 1.5), tensor.ErrRange, "IoU 1.5")
	assert.ErrorIs(t, d.RecordBox("x", "[0,0,1,1]", "nothing"), verifiers.ErrSyntax, "bad reference")
	st := d.Flush()
	want := []rewards.FixedIoUStats{{"coco", 3, 2.0 / 3, 1.6 / 3}, {"refcoco", 2, 0.5, 0.25}}
	require.Len(t, st, 2, "stats")
	for i := range want {
		a, b := st[i], want[i]
		assert.Equal(t, b.Source, a.Source, "stats[%d] = %+v, want %+v", i, a, b)
		assert.Equal(t, b.Count, a.Count, "stats[%d] = %+v, want %+v", i, a, b)
		assert.InDelta(t, b.HitRate, a.HitRate, 1e-12, "stats[%d] = %+v, want %+v", i, a, b)
		assert.InDelta(t, b.MeanIoU, a.MeanIoU, 1e-12, "stats[%d] = %+v, want %+v", i, a, b)
	}
	if m := rewards.FixedIoUMetrics("train", st); m["train/coco/fixed_iou_hit_rate"] != 2.0/3 {
		t.Errorf("metrics %v", m)
	}
	assert.Len(t, d.Snapshot(), 0, "Flush did not reset")
	_, err = rewards.NewFixedIoU(0)
	assert.ErrorIs(t, err, tensor.ErrRange, "threshold 0")
}
