package gae

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// TurnEnds writes the turn-end mask of a multi-turn loss mask into dst (same
// shape): 1 at every valid token whose successor is masked or past the end
// of the row, 0 elsewhere. Each maximal run of valid tokens is taken as one
// turn, which is how a trainer lays out a trajectory whose turns are
// separated by observation tokens; two turns with nothing between them read
// as one, so build the mask yourself in that case. dst must not overlap
// mask (ErrOverlap).
func TurnEnds[F tensor.Float](dst, mask tensor.Batch[F]) error {
	if err := mask.Check("mask"); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckShape("dst", dst, mask.Shape); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "mask", mask.Data); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckMask("mask", mask); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	for b := range mask.B {
		m, e := mask.Row(b), dst.Row(b)
		for t := range m {
			end := m[t] == 1 && (t+1 == len(m) || m[t+1] == 0)
			e[t] = 0
			if end {
				e[t] = 1
			}
		}
	}
	return nil
}

// PlaceTurnRewards writes per-turn rewards into a token-reward batch: dst is
// zeroed and turnRewards[b, k] is written at the k-th turn end of row b (in
// order along the row), where the turn-level recursion of BiLevel and
// TurnLevel reads it. turnRewards is a [B, K] batch with K at least the
// largest number of turn ends in a row; entries past a row's last turn are
// padding and never read. dst must not overlap turnEnd or turnRewards. Add
// per-token KL penalties afterwards with AddKLPenalty.
func PlaceTurnRewards[F tensor.Float](dst, turnEnd, turnRewards tensor.Batch[F]) error {
	if err := turnEnd.Check("turn_end"); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckShape("dst", dst, turnEnd.Shape); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := turnRewards.Check("turn_rewards"); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "turn_end", turnEnd.Data); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckDisjoint("dst", dst.Data, "turn_rewards", turnRewards.Data); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckMask("turn_end", turnEnd); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if turnRewards.B != turnEnd.B {
		return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrShape, "turn_rewards", nil,
			"%d rows, want B = %d", turnRewards.B, turnEnd.B))
	}
	for b := range turnEnd.B {
		n := 0
		for _, e := range turnEnd.Row(b) {
			if e == 1 {
				n++
			}
		}
		if n > turnRewards.T {
			return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrShape, "turn_rewards", tensor.At(b),
				"%d columns, but row %d of turn_end has %d turn ends", turnRewards.T, b, n))
		}
		for k, r := range turnRewards.Row(b)[:n] {
			if !tensor.IsFinite(r) {
				return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrNonFinite, "turn_rewards", tensor.At(b, k), "%v", float64(r)))
			}
		}
	}
	clear(dst.Data)
	for b := range turnEnd.B {
		k := 0
		row, rs := dst.Row(b), turnRewards.Row(b)
		for t, e := range turnEnd.Row(b) {
			if e == 1 {
				row[t] = rs[k]
				k++
			}
		}
	}
	return nil
}

// AddKLPenalty folds a per-token KL penalty into token rewards: rewards[b,t]
// −= β·kl[b,t] on valid tokens (VAGEN Alg. 1 line 13 and Alg. 2 lines 16
// and 21; verl's apply_kl_penalty). kl holds the caller's per-token estimate
// of KL(π_θ‖π_ref), e.g. logp − ref_logp (k1, verl kl_penalty "kl"); β ≥ 0
// is DefaultKLCoef in VAGEN. Mask-0 positions are neither read nor changed.
// On error rewards is unchanged.
func AddKLPenalty[F tensor.Float](rewards, kl, mask tensor.Batch[F], beta float64) error {
	if !(beta >= 0) || math.IsInf(beta, 1) {
		return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrRange, "beta", nil, "%v, want a finite number ≥ 0", beta))
	}
	if err := rewards.Check("rewards"); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckShape("kl", kl, rewards.Shape); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	if err := tensor.CheckShape("mask", mask, rewards.Shape); err != nil {
		return fmt.Errorf("gae: %w", err)
	}
	// Validate everything before writing, so that an error leaves the
	// rewards as they were.
	for i, m := range mask.Data {
		switch m {
		case 0:
			continue
		case 1:
		default:
			return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrMask, "mask", at(mask.T, i), "%v", float64(m)))
		}
		if k := kl.Data[i]; !tensor.IsFinite(k) {
			return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrNonFinite, "kl", at(mask.T, i), "%v", float64(k)))
		}
		if r := rewards.Data[i]; !tensor.IsFinite(r) {
			return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrNonFinite, "rewards", at(mask.T, i), "%v", float64(r)))
		}
		if v := F(float64(rewards.Data[i]) - beta*float64(kl.Data[i])); !tensor.IsFinite(v) {
			return fmt.Errorf("gae: %w", tensor.Errorf(tensor.ErrRange, "rewards", at(mask.T, i),
				"%v − %v·%v overflows", float64(rewards.Data[i]), beta, float64(kl.Data[i])))
		}
	}
	for i, m := range mask.Data {
		if m == 1 {
			rewards.Data[i] = F(float64(rewards.Data[i]) - beta*float64(kl.Data[i]))
		}
	}
	return nil
}

// at converts a flat index of a [B, T] batch to (row, column).
func at(T, i int) []int { return tensor.At(i/T, i%T) }
