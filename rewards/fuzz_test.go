package rewards_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
)

func FuzzReflective(f *testing.F) {
	for _, s := range []string{"wait", "check again", "re-check", "yeti", "\xffyet", "Try\tagain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := rewards.Reflective(s)
		// Surrounding the text with spaces never changes the answer, and
		// lower-casing ASCII never does either.
		if rewards.Reflective(" "+s+" ") != got {
			t.Errorf("Reflective(%q) depends on surrounding space", s)
		}
		if rewards.Reflective(strings.ToUpper(s)) != got && isASCII(s) {
			t.Errorf("Reflective(%q) depends on case", s)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzRouteSpec(f *testing.F) {
	f.Add(`{"data_source": "a", "verifier": "choice", "verifier_parm": {"extract": "none"}}`, 0.5, 1.0)
	f.Add(`{"accuracy_ratio": 0, "format_ratio": 3}`, 1.0, 0.0)
	f.Fuzz(func(t *testing.T, js string, acc, format float64) {
		var s rewards.RouteSpec
		if json.Unmarshal([]byte(js), &s) != nil || s.Validate() != nil {
			return
		}
		if !(acc >= 0 && acc <= 1 && format >= 0 && format <= 1) {
			return
		}
		if r := s.Combine(acc, format); !(r >= -1e-12 && r <= 1+1e-12) {
			t.Errorf("%+v.Combine(%v, %v) = %v, outside [0, 1]", s, acc, format, r)
		}
	})
}

func FuzzSelfReward(f *testing.F) {
	f.Add("a,b,a,,c", "0.1,0.9")
	f.Fuzz(func(t *testing.T, answers, conf string) {
		as := strings.Split(answers, ",")
		var cs []float64
		for _, c := range strings.Split(conf, ",") {
			var x float64
			if json.Unmarshal([]byte(c), &x) == nil {
				cs = append(cs, x)
			}
		}
		if len(cs) != len(as) {
			cs = nil
		}
		dst := make([]float64, len(as))
		best, err := rewards.SelfReward(dst, as, cs)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		top := 0
		for _, a := range as {
			if a != "" {
				count[a]++
				top = max(top, count[a])
			}
		}
		ones := 0
		for i, d := range dst {
			if d != 0 && d != 1 || d == 1 && as[i] == "" {
				t.Fatalf("dst = %v for %q", dst, as)
			}
			ones += int(d)
		}
		// The winner is an answer with the most votes, and exactly its
		// responses score 1.
		if best < 0 && top > 0 || best >= 0 && (count[as[best]] != top || ones != top) {
			t.Errorf("SelfReward(%q) = %v, winner %d", as, dst, best)
		}
	})
}

// FuzzRoute routes arbitrary responses and references to every built-in
// verifier: rewards stay in [0, a + f] and failures stay per sample.
func FuzzRoute(f *testing.F) {
	f.Add("<think>wait</think><answer>B</answer>", "B", 1.0, 0.1)
	f.Add("<answer>[0,0,1,1]</answer>", "[0,0,2,2]", 0.0, 1.0)
	names := verifiers.Names()
	f.Fuzz(func(t *testing.T, response, reference string, a, fr float64) {
		samples := make([]rewards.Sample, len(names))
		for i, n := range names {
			samples[i] = rewards.Sample{
				Spec:     rewards.RouteSpec{DataSource: n, Verifier: n, AccuracyRatio: a, FormatRatio: fr},
				Response: response, Reference: reference, Length: len(response),
			}
		}
		out := make([]rewards.Outcome, len(samples))
		diag := rewards.NewDiagnostics()
		if err := (&rewards.Router{Diagnostics: diag, Workers: 2}).Route(context.Background(), out, samples); err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if o.Err == nil && !(o.Reward >= -1e-12 && o.Reward <= (a+fr)*(1+1e-12)+1e-12) {
				t.Errorf("%s: reward %v", names[i], o.Reward)
			}
			if o.Err != nil && o.Reward != 0 {
				t.Errorf("%s: failed sample with reward %v", names[i], o.Reward)
			}
		}
		for _, s := range diag.Snapshot() {
			if math.IsNaN(s.Reward) || s.Count+s.Failed != 1 {
				t.Errorf("stats %+v", s)
			}
		}
	})
}

// FuzzNumeric drives the numeric components with arbitrary numbers: a
// finite result or an error, never a panic or a NaN.
func FuzzNumeric(f *testing.F) {
	f.Add(9.0, 10.0, 0.5, 0.2, -0.1, true)
	f.Add(math.Inf(1), 0.0, math.NaN(), 2.0, 1e308, false)
	f.Fuzz(func(t *testing.T, a, b, c, d, e float64, ok bool) {
		if r, err := rewards.RMAE(a, b); err == nil && !(r >= 0 && r <= 1) {
			t.Errorf("RMAE(%v, %v) = %v", a, b, r)
		}
		if r, err := rewards.MeanTokenLikelihood([]float64{a, b, c}); err == nil && !(r >= 0 && r <= 1) {
			t.Errorf("MeanTokenLikelihood = %v", r)
		}
		if r, err := rewards.AVATARStage3().Combine(a, b, c); err == nil && (math.IsNaN(r) || math.IsInf(r, 0)) {
			t.Errorf("Combine(%v, %v, %v) = %v", a, b, c, r)
		}
		dst := make([]float32, 1)
		cfg := rewards.TurnConfig{BetaG: d, BetaW: e, Format: a}
		if err := rewards.TurnRewards(dst, []rewards.Turn{{Grounding: b, WorldModeling: c, FormatOK: ok, Env: e}}, cfg); err == nil && (math.IsNaN(float64(dst[0])) || math.IsInf(float64(dst[0]), 0)) {
			t.Errorf("TurnRewards = %v", dst[0])
		}
		var diag rewards.Diagnostics
		if err := diag.Record(rewards.Observation{Source: "s", Reward: a, Accuracy: b, Format: c, Correct: ok, Length: int(d)}); err == nil {
			for k, v := range rewards.Metrics("p", diag.Snapshot()) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("metric %s = %v", k, v)
				}
			}
		}
	})
}

func FuzzGroundingWorldModelingFormat(f *testing.F) {
	f.Add("<think><observation>o</observation><reasoning>r</reasoning><prediction>p</prediction></think><answer>a</answer>")
	f.Add("<think><prediction></think>")
	f.Fuzz(func(t *testing.T, s string) {
		if rewards.GroundingWorldModelingFormat(s) {
			// A well-formed turn has one of each tag, so V-Triune's tag count is full too.
			if verifiers.FormatTags(s) != 1 || !strings.HasPrefix(strings.TrimSpace(s), "<think>") {
				t.Errorf("GroundingWorldModelingFormat(%q) but FormatTags %v", s, verifiers.FormatTags(s))
			}
		}
	})
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{"<think>x</think><answer>YES</answer>", "<answer>no.</answer>", "<answer>", "YES", "<answer>YES</answer><answer>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<14 {
			return
		}
		yes, err := rewards.ParseVerdict(s)
		if err == nil && !strings.Contains(strings.ToLower(s), map[bool]string{true: "yes", false: "no"}[yes]) {
			t.Fatalf("ParseVerdict(%q) = %v without the word", s, yes)
		}
	})
}
