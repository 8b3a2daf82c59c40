package rewards

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers"
)

// RouteSpec is V-Triune's per-sample routing metadata (§3.1, Fig. 8): the
// source, the verifier key and its parameters, and the weights of accuracy
// and format in the sample's reward, which V-Triune §3.2 writes as
//
//	reward = a·accuracy + f·format
//
// (α_acc·R_acc + α_format·R_format). CombineNormalized is the form rlpost
// used before, divided by a + f.
//
// JSON decoding starts from the defaults a = 1.0, f = 0.1, so absent
// ratios take them; fields other than these five (V-Triune's reward_model
// also holds "answer" and "ground_truth") are ignored. In Go, start from
// DefaultRouteSpec.
type RouteSpec struct {
	DataSource    string           `json:"data_source"`
	Verifier      string           `json:"verifier"`
	VerifierParm  verifiers.Params `json:"verifier_parm"`
	AccuracyRatio float64          `json:"accuracy_ratio"`
	FormatRatio   float64          `json:"format_ratio"`
}

// DefaultRouteSpec returns a spec with the ratios a = 1.0, f = 0.1. V-Triune
// routes every sample with its own accuracy_ratio and format_ratio (Fig. 8)
// and states no default; these are rlpost's.
func DefaultRouteSpec() RouteSpec { return RouteSpec{AccuracyRatio: 1, FormatRatio: 0.1} }

// UnmarshalJSON decodes a spec on top of the default ratios, and rejects
// ratios that are negative or whose sum overflows (see Validate) when the
// spec is built rather than when a sample is scored.
func (s *RouteSpec) UnmarshalJSON(b []byte) error {
	type plain RouteSpec // no methods: no recursion
	p := plain(DefaultRouteSpec())
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if err := RouteSpec(p).validateRatios(); err != nil {
		return fmt.Errorf("rewards: %w", err)
	}
	*s = RouteSpec(p)
	return nil
}

// Validate reports ratios that are negative, not finite, both zero or so
// large that a + f overflows (the reward would be NaN), and a missing
// verifier key when the accuracy ratio is positive (a spec with a = 0
// scores format only and needs no verifier).
func (s RouteSpec) Validate() error {
	if err := s.validateRatios(); err != nil {
		return err
	}
	if s.Verifier == "" && s.AccuracyRatio > 0 {
		return tensor.Errorf(tensor.ErrEmpty, "verifier", nil, "no verifier key with accuracy_ratio %v", s.AccuracyRatio)
	}
	return nil
}

func (s RouteSpec) validateRatios() error {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"accuracy_ratio", s.AccuracyRatio}, {"format_ratio", s.FormatRatio}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return tensor.Errorf(tensor.ErrRange, f.name, nil, "%v, want a finite number ≥ 0", f.v)
		}
	}
	if s.AccuracyRatio+s.FormatRatio == 0 {
		return tensor.Errorf(tensor.ErrRange, "accuracy_ratio + format_ratio", nil, "0; start from DefaultRouteSpec (1.0 and 0.1)")
	}
	if math.IsInf(s.AccuracyRatio+s.FormatRatio, 0) {
		return tensor.Errorf(tensor.ErrRange, "accuracy_ratio + format_ratio", nil, "%v + %v overflows; scale both down", s.AccuracyRatio, s.FormatRatio)
	}
	return nil
}

// Combine returns a·acc + f·format for a valid spec: V-Triune §3.2's
// α_acc·R_acc + α_format·R_format.
func (s RouteSpec) Combine(acc, format float64) float64 {
	return s.AccuracyRatio*acc + s.FormatRatio*format
}

// Sample is one response to score.
type Sample struct {
	Spec RouteSpec
	// Response is the model output; Reference the ground truth
	// (V-Triune's reward_model.ground_truth).
	Response, Reference string
	// Length is the response length in tokens and Truncated whether it hit
	// the generation limit; both only feed the diagnostics.
	Length    int
	Truncated bool
}

// Outcome is the reward of one sample.
type Outcome struct {
	// Reward = a·Accuracy + f·Format (RouteSpec.Combine).
	Reward float64
	// Accuracy is the verifier's score, Format the format verifier's; a
	// component with ratio 0 is not computed and reads 0.
	Accuracy, Format float64
	// Correct and Parsed come from the verifier.
	Correct bool
	Parsed  string
	// Timeout marks a verification stopped by its deadline (the verifier's
	// own budget or Router.Timeout); Reason says why an accuracy is 0
	// without a judgement (no answer slot, a size limit, a timeout). Such
	// a sample is a verdict of 0, counted in every mean, not an Err.
	Timeout bool
	Reason  string
	// Err is this sample's failure (bad spec, unknown verifier, reference
	// that does not parse, the batch's context ending, a verifier that
	// panicked); Reward is 0 then. Other samples are unaffected.
	Err error
}

// Router scores batches of samples, each by the verifier its spec names.
// The zero value uses verifiers.Default, V-Triune's format reward, one
// worker per CPU and no diagnostics. A Router is safe for concurrent use
// if its Registry and Format are.
//
// Rewards come out in [0, a + f]; reward scaling (AReaL) and DAPO's
// overlong shaping are separate steps: grpo.ShapeRewards and grpo.Overlong.
type Router struct {
	// Registry resolves verifier keys; nil means verifiers.Default.
	Registry *verifiers.Registry
	// Format scores the format component (Verify(ctx, response, ""));
	// nil means V-Triune's Eq. 2 (verifiers.FormatTagsVerifier).
	Format verifiers.Verifier
	// Workers bounds how many samples are scored at once; ≤ 0 means
	// runtime.GOMAXPROCS(0). Raise it for verifiers that wait on I/O, such
	// as judges.
	Workers int
	// Timeout bounds each sample's verification; 0 means none beyond ctx.
	Timeout time.Duration
	// Diagnostics, when set, receives every scored sample after the batch
	// is done, in sample order.
	Diagnostics *Diagnostics
}

// Route scores samples into dst (same length), concurrently on at most
// r.Workers goroutines. A sample's failure is reported in its Outcome.Err
// and does not stop the others. When ctx is cancelled, samples not yet
// started get Err = ctx.Err() and Route returns ctx.Err(); otherwise it
// returns nil, or an error for dst of the wrong length.
func (r *Router) Route(ctx context.Context, dst []Outcome, samples []Sample) error {
	if len(dst) != len(samples) {
		return fmt.Errorf("rewards: %w", tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d (samples)", len(dst), len(samples)))
	}
	reg := r.Registry
	if reg == nil {
		reg = verifiers.Default
	}
	format := r.Format
	if format == nil {
		format = formatTags
	}
	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(samples))
	// Reflection scanning reads every response, so the workers do it, not
	// the single goroutine that records the diagnostics.
	var reflective []bool
	if r.Diagnostics != nil {
		reflective = make([]bool, len(samples))
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(samples) {
				return
			}
			if err := ctx.Err(); err != nil {
				dst[i] = Outcome{Err: err}
				continue
			}
			dst[i] = r.score(ctx, reg, format, &samples[i])
			if dst[i].Err != nil {
				dst[i].Err = fmt.Errorf("rewards: %s: %w", sampleName(i, &samples[i].Spec), dst[i].Err)
			} else if reflective != nil {
				reflective[i] = Reflective(samples[i].Response)
			}
		}
	}
	if workers <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	if r.Diagnostics != nil {
		r.Diagnostics.recordBatch(samples, dst, reflective, ctx.Err() != nil)
	}
	return ctx.Err()
}

// formatTags is the default format verifier, V-Triune's Eq. 2.
var formatTags = func() verifiers.Verifier {
	v, err := verifiers.New("format_tags", nil)
	if err != nil {
		panic(err) // a built-in without parameters: cannot fail
	}
	return v
}()

// sampleName names sample i in an error: samples[3], with its data source
// when the spec has one (samples[3] (gsm8k)).
func sampleName(i int, spec *RouteSpec) string {
	if spec.DataSource == "" {
		return fmt.Sprintf("samples[%d]", i)
	}
	return fmt.Sprintf("samples[%d] (%s)", i, spec.DataSource)
}

// score computes one sample's outcome; a panic in a verifier becomes the
// sample's error instead of taking the trainer down.
func (r *Router) score(ctx context.Context, reg *verifiers.Registry, format verifiers.Verifier, s *Sample) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = Outcome{Err: fmt.Errorf("verifier %q panicked: %v", s.Spec.Verifier, p)}
		}
	}()
	spec := &s.Spec
	if err := spec.Validate(); err != nil {
		return Outcome{Err: err}
	}
	parent := ctx
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	if spec.AccuracyRatio > 0 {
		res, err := reg.Verify(ctx, spec.Verifier, s.Response, s.Reference, spec.VerifierParm)
		if err != nil {
			// The sample's own deadline expired (not the batch's): a
			// verdict of 0 that the statistics count, not a failure that
			// drops the sample from them.
			if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
				return Outcome{Timeout: true, Reason: "timeout: " + err.Error()}
			}
			return Outcome{Err: err}
		}
		if res.Timeout && parent.Err() != nil {
			// The batch's context ended: not this sample's verdict.
			return Outcome{Err: parent.Err()}
		}
		out.Accuracy, out.Correct, out.Parsed = res.Score, res.Correct, res.Parsed
		out.Timeout, out.Reason = res.Timeout, res.Reason
	}
	if spec.FormatRatio > 0 {
		res, err := format.Verify(ctx, s.Response, "")
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
				return Outcome{Timeout: true, Reason: "timeout: format: " + err.Error()}
			}
			return Outcome{Err: fmt.Errorf("format: %w", err)}
		}
		if !(res.Score >= 0 && res.Score <= 1) {
			return Outcome{Err: fmt.Errorf("format verifier returned %v, want a score in [0, 1]", res.Score)}
		}
		out.Format = res.Score
	}
	out.Reward = spec.Combine(out.Accuracy, out.Format)
	return out
}

// isContextErr reports whether err comes from a cancelled or expired
// context.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
