package ppo

// Metrics returns the call's statistics under verl's metric names, for a
// trainer that logs them where verl would (docs/spec.md#statistics). Where a
// name collides with verl's, the value is verl's quantity:
//
//	actor/pg_loss             PolicyLoss
//	actor/pg_clipfrac         ClipFracHigh + ClipFracLow (the surrogate's clip,
//	                          either side; Clip-Cov: CovPickedFrac, as verl)
//	actor/pg_clipfrac_lower   DualClipFrac (verl's "lower" is the dual clip)
//	actor/ppo_kl              ApproxKL (verl averages the clamped log-ratio;
//	                          equal unless some |Δ| > LogRatioClamp)
//	actor/kl_loss             KL, the mean KL estimate (verl aggregates it with
//	                          loss_agg_mode; equal under token-mean)
//	actor/entropy             Entropy (mean over valid tokens)
//
// and, with rollout log-probs, rollout_corr/kl, k3_kl, training_ppl,
// rollout_ppl, ppl_ratio, rollout_is_mean, rollout_is_ratio_fraction_high,
// rollout_rs_masked_fraction and rollout_rs_seq_masked_fraction, and where
// they acted rollout_is_masked_fraction, rollout_is_batch_norm_factor and
// outlier_seq_masked_fraction (see RolloutStats). It allocates the map; call it once per step, not per token.
func (r Result) Metrics() map[string]float64 {
	m := map[string]float64{
		"actor/pg_loss":           r.PolicyLoss,
		"actor/pg_clipfrac":       r.ClipFracHigh + r.ClipFracLow,
		"actor/pg_clipfrac_lower": r.DualClipFrac,
		"actor/ppo_kl":            r.ApproxKL,
		"actor/kl_loss":           r.KL,
		"actor/entropy":           r.Entropy,
	}
	if r.CovPickedFrac > 0 {
		m["actor/pg_clipfrac"] = r.CovPickedFrac
	}
	if ro := r.Rollout; ro != (RolloutStats{}) {
		for k, v := range map[string]float64{
			"kl": ro.KL, "k3_kl": ro.K3KL, "training_ppl": ro.TrainingPPL, "rollout_ppl": ro.RolloutPPL,
			"ppl_ratio": ro.PPLRatio, "rollout_is_mean": ro.ISMean, "rollout_is_ratio_fraction_high": ro.ISTruncatedFrac,
			"rollout_rs_masked_fraction": ro.RSMaskedFrac, "rollout_rs_seq_masked_fraction": ro.RSSeqMaskedFrac,
			"offpolicy_seq_masked_fraction": ro.OffPolicyMaskedFrac,
		} {
			m["rollout_corr/"+k] = v
		}
		// The two-sided corrections' metrics, where they acted.
		if ro.ISMaskedFrac > 0 {
			m["rollout_corr/rollout_is_masked_fraction"] = ro.ISMaskedFrac
		}
		if ro.ISBatchNormFactor != 1 && ro.ISBatchNormFactor != 0 {
			m["rollout_corr/rollout_is_batch_norm_factor"] = ro.ISBatchNormFactor
		}
		if ro.OutlierSeqMaskedFrac > 0 {
			m["rollout_corr/outlier_seq_masked_fraction"] = ro.OutlierSeqMaskedFrac
		}
	}
	return m
}
