package rewards

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/rlpost/rlpost/tensor"
)

// reflectionWords are the single words of V-Triune's reflection list
// (Appendix I, after Ma et al. 2025); "check again", "think again" and "try
// again" are matched as word pairs.
var reflectionWords = [...]string{
	"re-check", "re-evaluate", "re-examine", "re-think",
	"recheck", "reevaluate", "reexamine", "rethink",
	"reevaluation", "verify", "wait", "yet",
}

// Reflective reports whether s contains one of V-Triune's 15 reflection
// words and phrases: re-check, re-evaluate, re-examine, re-think, recheck,
// reevaluate, reexamine, rethink, reevaluation, check again, think again,
// try again, verify, wait, yet. Matching ignores case and is by whole
// word, so "Wait," counts but "await", "yeti" and "verifying" do not;
// words are runs of letters joined by single inner hyphens, and a phrase's
// two words may be separated by white space only. The paper does not say
// whether it matched substrings; whole words avoid counting "yet" in
// "yeti". One pass, no allocation.
func Reflective(s string) bool {
	prev := ""  // the previous word while only white space follows it
	start := -1 // start of the current word
	for i := 0; i < len(s); {
		if c := s[i] | 0x20; 'a' <= c && c <= 'z' { // ASCII letters, the common case
			if start < 0 {
				start = i
			}
			i++
			continue
		}
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if r >= utf8.RuneSelf && unicode.IsLetter(r) {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if r == '-' && start >= 0 && i+1 < len(s) {
			if next, _ := utf8.DecodeRuneInString(s[i+1:]); isLetter(next) {
				i += size
				continue
			}
		}
		if start >= 0 {
			if reflectionMatch(prev, s[start:i]) {
				return true
			}
			prev, start = s[start:i], -1
		}
		if !isSpace(r) {
			prev = ""
		}
		i += size
	}
	return start >= 0 && reflectionMatch(prev, s[start:])
}

// isLetter and isSpace answer ASCII without a table lookup; responses are
// mostly ASCII and Reflective runs over every one of them.
func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// reflectionMatch reports whether word, or prev followed by word, is on
// the list.
func reflectionMatch(prev, word string) bool {
	if len(word) < 3 || len(word) > 12 {
		return false
	}
	switch word[0] | 0x20 {
	case 'a':
		return len(word) == 5 && strings.EqualFold(word, "again") &&
			(strings.EqualFold(prev, "check") || strings.EqualFold(prev, "think") || strings.EqualFold(prev, "try"))
	case 'r', 'v', 'w', 'y':
		for _, r := range reflectionWords {
			if len(r) == len(word) && strings.EqualFold(r, word) {
				return true
			}
		}
	}
	return false
}

// Observation is one scored response, as Diagnostics records it.
type Observation struct {
	// Source is the sample's data_source.
	Source string
	// Reward, Accuracy and Format are the sample's scores.
	Reward, Accuracy, Format float64
	Correct                  bool
	// Length is the response length (tokens), Truncated whether it hit
	// the generation limit.
	Length    int
	Truncated bool
	// Response is scanned for reflection words; it is not kept.
	Response string
	// Failed marks a sample whose verification failed: it is counted, and
	// left out of every mean.
	Failed bool
	// Timeout marks a verdict of 0 because verification ran out of time:
	// it is in every mean (as the 0 it scored) and counted in Timeouts.
	Timeout bool
	// Limit marks a verdict of 0 because the response hit a verifier's
	// size or work limit (a Reason starting "limit:"): in every mean and
	// counted in Limits.
	Limit bool
}

// SourceStats are the diagnostics of one data source since the last reset
// (V-Triune §3.3, Appendix I). Means over no samples are 0.
type SourceStats struct {
	Source string
	// Count is the number of scored samples; Failed the number whose
	// verification failed (not in the means); Timeouts and Limits the
	// numbers of scored samples whose verification timed out or hit a
	// limit (in the means, as the 0 they scored).
	Count, Failed, Timeouts, Limits int
	// Mean reward, accuracy and format scores, and the share of correct
	// samples.
	Reward, Accuracy, Format, CorrectRate float64
	// Mean response length over all, correct and incorrect samples.
	Length, LengthCorrect, LengthIncorrect float64
	// TruncationRate is the share of truncated responses.
	TruncationRate float64
	// Reflective is N_reflect, the number of responses with a reflection
	// word; ReflectionRatio = N_reflect/N_total (Eq. 4) and
	// ReflectionCorrect = N_correct_reflect/N_reflect (Eq. 5).
	Reflective                         int
	ReflectionRatio, ReflectionCorrect float64
}

type sourceAcc struct {
	n, failed, timeouts, limits, correct, truncated, reflective, reflectiveCorrect int
	reward, accuracy, format                                                       float64
	length, lengthCorrect                                                          float64
}

// Diagnostics accumulates per-source statistics of scored samples, for a
// trainer to log each step (Snapshot, then Reset, or Flush for both). It is
// safe for concurrent use; sums are in float64, in the order of recording.
type Diagnostics struct {
	mu      sync.Mutex
	sources map[string]*sourceAcc
}

// NewDiagnostics returns empty diagnostics. The zero value is ready too.
func NewDiagnostics() *Diagnostics { return &Diagnostics{} }

func (d *Diagnostics) acc(source string) *sourceAcc {
	if d.sources == nil {
		d.sources = make(map[string]*sourceAcc)
	}
	a := d.sources[source]
	if a == nil {
		a = new(sourceAcc)
		d.sources[source] = a
	}
	return a
}

// Record adds one observation. Scores must be finite and Length ≥ 0.
func (d *Diagnostics) Record(o Observation) error {
	if !o.Failed {
		if err := o.check(); err != nil {
			return fmt.Errorf("rewards: %w", err)
		}
	}
	reflective := !o.Failed && Reflective(o.Response)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.acc(o.Source).add(&o, reflective)
	return nil
}

func (o *Observation) check() error {
	if err := checkFinite("Observation.", field{"Reward", o.Reward}, field{"Accuracy", o.Accuracy}, field{"Format", o.Format}); err != nil {
		return err
	}
	if o.Length < 0 {
		return tensor.Errorf(tensor.ErrRange, "Observation.Length", nil, "%d, want ≥ 0", o.Length)
	}
	return nil
}

// field is a named number for checkFinite.
type field struct {
	name string
	v    float64
}

// checkFinite reports the first field that is NaN or infinite, naming it
// prefix+name.
func checkFinite(prefix string, fields ...field) error {
	for _, f := range fields {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return tensor.Errorf(tensor.ErrNonFinite, prefix+f.name, nil, "%v", f.v)
		}
	}
	return nil
}

func (a *sourceAcc) add(o *Observation, reflective bool) {
	if o.Failed {
		a.failed++
		return
	}
	a.n++
	if o.Timeout {
		a.timeouts++
	}
	if o.Limit {
		a.limits++
	}
	a.reward += o.Reward
	a.accuracy += o.Accuracy
	a.format += o.Format
	a.length += float64(o.Length)
	if o.Correct {
		a.correct++
		a.lengthCorrect += float64(o.Length)
	}
	if o.Truncated {
		a.truncated++
	}
	if reflective {
		a.reflective++
		if o.Correct {
			a.reflectiveCorrect++
		}
	}
}

// recordBatch records a routed batch in sample order, with reflective[i]
// telling whether response i is reflective. Samples cancelled with the
// batch are not verification failures and are skipped when skipCancelled
// is set.
func (d *Diagnostics) recordBatch(samples []Sample, outs []Outcome, reflective []bool, skipCancelled bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range samples {
		s, out := &samples[i], &outs[i]
		if out.Err != nil && skipCancelled && isContextErr(out.Err) {
			continue
		}
		o := Observation{
			Source: s.Spec.DataSource, Reward: out.Reward, Accuracy: out.Accuracy, Format: out.Format,
			Correct: out.Correct, Length: max(s.Length, 0), Truncated: s.Truncated, Failed: out.Err != nil,
			Timeout: out.Timeout, Limit: strings.HasPrefix(out.Reason, "limit:"),
		}
		d.acc(o.Source).add(&o, reflective[i])
	}
}

// Snapshot returns the statistics of every source seen since the last
// reset, sorted by source.
func (d *Diagnostics) Snapshot() []SourceStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snapshot()
}

func (d *Diagnostics) snapshot() []SourceStats {
	out := make([]SourceStats, 0, len(d.sources))
	for src, a := range d.sources {
		out = append(out, a.stats(src))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

// Reset forgets everything recorded.
func (d *Diagnostics) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sources = nil
}

// Flush returns the snapshot and resets, atomically: no observation
// recorded concurrently is lost between the two.
func (d *Diagnostics) Flush() []SourceStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.snapshot()
	d.sources = nil
	return s
}

func ratio(num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return num / den
}

func (a *sourceAcc) stats(src string) SourceStats {
	n := float64(a.n)
	incorrect := float64(a.n - a.correct)
	return SourceStats{
		Source:            src,
		Count:             a.n,
		Failed:            a.failed,
		Timeouts:          a.timeouts,
		Limits:            a.limits,
		Reward:            ratio(a.reward, n),
		Accuracy:          ratio(a.accuracy, n),
		Format:            ratio(a.format, n),
		CorrectRate:       ratio(float64(a.correct), n),
		Length:            ratio(a.length, n),
		LengthCorrect:     ratio(a.lengthCorrect, float64(a.correct)),
		LengthIncorrect:   ratio(a.length-a.lengthCorrect, incorrect),
		TruncationRate:    ratio(float64(a.truncated), n),
		Reflective:        a.reflective,
		ReflectionRatio:   ratio(float64(a.reflective), n),
		ReflectionCorrect: ratio(float64(a.reflectiveCorrect), float64(a.reflective)),
	}
}

// Metrics flattens stats into the key/value form trainers log, keys
// "<prefix>/<source>/<metric>" with the metrics count, failed, timeouts, limits, reward,
// accuracy, format, correct_rate, length, length_correct,
// length_incorrect, truncation_rate, reflection_ratio, reflection_correct.
func Metrics(prefix string, stats []SourceStats) map[string]float64 {
	m := make(map[string]float64, 14*len(stats))
	for _, s := range stats {
		p := prefix + "/" + s.Source + "/"
		m[p+"count"] = float64(s.Count)
		m[p+"failed"] = float64(s.Failed)
		m[p+"timeouts"] = float64(s.Timeouts)
		m[p+"limits"] = float64(s.Limits)
		m[p+"reward"] = s.Reward
		m[p+"accuracy"] = s.Accuracy
		m[p+"format"] = s.Format
		m[p+"correct_rate"] = s.CorrectRate
		m[p+"length"] = s.Length
		m[p+"length_correct"] = s.LengthCorrect
		m[p+"length_incorrect"] = s.LengthIncorrect
		m[p+"truncation_rate"] = s.TruncationRate
		m[p+"reflection_ratio"] = s.ReflectionRatio
		m[p+"reflection_correct"] = s.ReflectionCorrect
	}
	return m
}
