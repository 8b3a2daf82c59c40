package gae

// WithoutAVX512 runs f with the token-level scan held to the four-row
// AVX2 kernel, so that its tests run on a processor with AVX-512 too.
func WithoutAVX512(f func()) {
	saved := useAVX512
	useAVX512 = false
	defer func() { useAVX512 = saved }()
	f()
}
