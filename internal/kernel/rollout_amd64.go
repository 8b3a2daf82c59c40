//go:build !purego

package kernel

//go:noescape
func rolloutTokensAVX2(k *RolloutTokens)

// Run runs the AVX2 rollout-correction kernel on the first k.N &^ 7 tokens
// and reports whether it ran; without AVX2 it does nothing and returns
// false.
func (k *RolloutTokens) Run() bool {
	if !HasAVX2 {
		return false
	}
	rolloutTokensAVX2(k)
	return true
}
