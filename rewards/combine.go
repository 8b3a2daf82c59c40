package rewards

// CombineNormalized returns (a·acc + f·format)/(a + f) for a valid spec:
// the weighted mean of the two components, in [0, 1] when they are. This
// is not V-Triune's formula (Combine is, §3.2); it is kept as an explicit
// option for trainers that logged or tuned against it. Dividing by a + f
// rescales every reward of a source by the same factor, which leaves GRPO's
// std-normalised advantages unchanged but scales Dr. GRPO's unnormalised
// ones and every logged reward. Recompute it from an Outcome's Accuracy
// and Format: spec.CombineNormalized(o.Accuracy, o.Format).
func (s RouteSpec) CombineNormalized(acc, format float64) float64 {
	return s.Combine(acc, format) / (s.AccuracyRatio + s.FormatRatio)
}
