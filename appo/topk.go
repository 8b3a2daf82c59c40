package appo

import "github.com/rlpost/rlpost/tensor"

// topK writes into dst[:0] the indices x ∈ [0, n) of the k largest values
// data[off + x·stride], in rank order: the larger value first and, among
// equal values, the lower index first. k ≥ n takes all n. Every top-K of
// the algorithm goes through here, so they all break ties the same way.
//
// It keeps the current best k sorted and inserts each newcomer from the
// back. Candidates arrive in index order, so an equal value never moves
// past an earlier one, and a value not above the current k-th is dropped
// after one comparison, which is the common case once the buffer is
// full. That makes it O(n) in practice for the small k APPO uses (15, 5,
// 64 out of hundreds of tokens), with no allocation when dst has capacity
// min(k, n).
func topK[E tensor.Float](dst []int, data []E, off, stride, n, k int) []int {
	k = min(k, n)
	dst = dst[:0]
	if k <= 0 {
		return dst
	}
	for x := range n {
		v := data[off+x*stride]
		if len(dst) < k {
			dst = append(dst, x)
		} else if v > data[off+dst[k-1]*stride] {
			dst[k-1] = x
		} else {
			continue
		}
		p := len(dst) - 1
		for p > 0 && data[off+dst[p-1]*stride] < v {
			dst[p] = dst[p-1]
			p--
		}
		dst[p] = x
	}
	return dst
}
