package rewards_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/verifiers"
	"github.com/stretchr/testify/require"
)

// mixedBatch builds n samples spread over three sources and verifiers:
// multiple choice, counting (number) and detection, with responses of a
// few hundred bytes of reasoning, some reflective, some malformed.
func mixedBatch(n int, seed uint64) []rewards.Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	filler := strings.Repeat("The image shows several objects; consider each region in turn. ", 5)
	samples := make([]rewards.Sample, n)
	for i := range samples {
		think := filler
		if rng.IntN(4) == 0 {
			think += "Wait, let me check again. "
		}
		spec := rewards.DefaultRouteSpec()
		var answer, ref string
		switch i % 3 {
		case 0:
			spec.DataSource, spec.Verifier = "mmk12", "choice"
			answer, ref = string(rune('A'+rng.IntN(4))), "B"
		case 1:
			spec.DataSource, spec.Verifier = "pixmo_count", "number"
			answer, ref = fmt.Sprintf("There are %d objects", 5+rng.IntN(3)), "6"
		case 2:
			spec.DataSource, spec.Verifier = "coco", "detection"
			spec.VerifierParm = verifiers.Params{"progress": rng.Float64()}
			ref = `[{"label": "cat", "bbox": [10, 10, 110, 110]}, {"label": "dog", "bbox": [200, 50, 300, 150]}]`
			d := rng.Float64() * 8
			answer = fmt.Sprintf(`[{"bbox_2d": [%.1f, 10, 110, 110], "label": "cat"}, {"bbox_2d": [200, 50, %.1f, 150], "label": "dog"}]`, 10+d, 300-d)
		}
		resp := "<think>" + think + "</think><answer>" + answer + "</answer>"
		if rng.IntN(10) == 0 {
			resp = think + answer // no tags: format 0, nothing extracted for some
		}
		samples[i] = rewards.Sample{Spec: spec, Response: resp, Reference: ref, Length: len(resp) / 4, Truncated: rng.IntN(50) == 0}
	}
	return samples
}

// BenchmarkRoute10k routes a mixed batch of 10 000 samples over three
// verifiers in one call, with per-source diagnostics, and reports samples
// per second: on one worker, and on one per CPU (the default).
func BenchmarkRoute10k(b *testing.B) {
	samples := mixedBatch(10000, 7)
	out := make([]rewards.Outcome, len(samples))
	ctx := context.Background()
	for _, workers := range []int{1, 0} {
		name := "workers=1"
		if workers == 0 {
			name = "workers=GOMAXPROCS"
		}
		b.Run(name, func(b *testing.B) {
			diag := rewards.NewDiagnostics()
			r := rewards.Router{Diagnostics: diag, Workers: workers}
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Route(ctx, out, samples); err != nil {
					b.Fatal(err)
				}
				diag.Flush()
			}
			for i, o := range out {
				if o.Err != nil {
					b.Fatalf("sample %d: %v", i, o.Err)
				}
			}
			perCall := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(len(samples))/perCall, "samples/s")
			b.ReportMetric(perCall*1e9/float64(len(samples)), "ns/sample")
		})
	}
}

// TestMixedBatchDiagnostics checks the benchmark's batch end to end, so the
// benchmark measures working code.
func TestMixedBatchDiagnostics(t *testing.T) {
	samples := mixedBatch(3000, 7)
	out := make([]rewards.Outcome, len(samples))
	diag := rewards.NewDiagnostics()
	require.NoError(t, (&rewards.Router{Diagnostics: diag}).Route(context.Background(), out, samples))
	stats := diag.Flush()
	require.Len(t, stats, 3, "%d sources", len(stats))
	for _, s := range stats {
		if s.Count != 1000 || s.Failed != 0 || !(s.Accuracy > 0 && s.Accuracy < 1) || !(s.ReflectionRatio > 0.15 && s.ReflectionRatio < 0.35) {
			t.Errorf("%+v", s)
		}
	}
	// Serial and parallel routing agree exactly.
	serial := make([]rewards.Outcome, len(samples))
	require.NoError(t, (&rewards.Router{Workers: 1}).Route(context.Background(), serial, samples))
	for i := range out {
		require.Equal(t, serial[i], out[i], "sample %d: parallel, serial", i)
	}
}
