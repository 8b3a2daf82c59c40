package kernel

// GAETokens4 is the argument block of the token-level GAE kernel over four
// rows of float32 storage whose tokens [0, N) are all valid: row q's
// element t is at byte offset Off[q] + 4·t from each pointer. The kernel
// runs the recursion of gae.Advantages,
//
//	a_t = ((r_t + γ·nv) − v_t) + γλ·na,  adv_t = F(a_t),  ret_t = F(a_t + v_t),
//
// from t = N−1 down to 0, the four rows in the four float64 lanes of one
// register, with the operations of the Go loop in its order (no fused
// multiply-add), so each row gets the Go loop's bits; the four independent
// chains of multiply-adds overlap instead of each waiting on its own. NV
// and NA hold each row's state (the value and advantage of the next valid
// token, 0 at a row's end) on entry and on return. Bad has bit q set if an
// output of row q is not finite. The assembly reads fields by offset:
// TestGAETokens4Layout pins them.
type GAETokens4 struct {
	R, V, Adv, Ret *float32
	Off            [4]int64 // byte offset of each row
	N              int64
	_              [3]int64
	G, GL          [4]float64 // γ and γλ in every lane
	NV, NA         [4]float64
	Bad            int64
}

// Run runs the kernel and reports whether it ran; without AVX2 it does
// nothing and returns false.
func (k *GAETokens4) Run() bool {
	if !HasAVX2 {
		return false
	}
	gaeTokens4AVX2(k)
	return true
}
