// Package tensor defines the token-batch layout every rlpost package shares.
//
// A token batch holds one number per token of B sequences padded to T
// positions: log-probabilities, advantages, values, rewards or weights. It is
// stored as a flat row-major slice, so element (b, t) lives at Data[b*T+t],
// exactly the memory layout of a contiguous [B, T] tensor in PyTorch or
// gorgonia. Storage is float32 (what trainers hold) or float64 (what the
// finite-difference checks and high-precision callers use); every package
// accumulates sums, means and variances in float64 whatever the storage.
//
// A batch may instead be packed (Packed): the variable-length layout of
// flash-attention, one flat array of every row's tokens in turn delimited by
// B+1 cu_seqlens offsets, with no padding. Row b is then
// Data[Offsets[b]:Offsets[b+1]]; Row and Span serve both layouts. Check and
// CheckShape accept padded batches only, so code that indexes Data[b*T+t]
// rejects packed ones; code that goes through Row or Span validates with
// CheckLayout and CheckLike (one layout per call) and accepts both.
//
// A mask is a batch whose entries are exactly 0 or 1. Masks are general: a
// multi-turn trajectory has observation tokens (mask 0) between the turns the
// policy generated (mask 1), so nothing in rlpost assumes that the valid
// tokens of a row form a prefix. Per-row lengths are counts of valid tokens.
//
// Validation reports the argument and the position that is wrong through
// *ArgError, whose Kind can be matched with errors.Is against ErrShape,
// ErrNonFinite, ErrMask, ErrEmpty, ErrRange and ErrOverlap (an output that
// shares memory with an argument it must not alias; see Overlaps).
//
// Batch.At, Set and Row panic on an index out of range, as slice indexing
// does, a column past the end of a row included: they are for code that
// already knows its shapes, and data errors go through the Check functions.
//
// The package has no dependency beyond the standard library; zero-copy
// interoperation with gorgonia.org/tensor lives in the sub-package
// tensor/dense so that importers of the core packages do not pull
// gorgonia's dependency tree.
package tensor
